import pg from 'pg';

export interface TableVacuumOptions {
  connectionString: string;
  /** The message table. */
  table: string;
  /** VACUUM after this many deletes (0: never, autovacuum's job). */
  everyDeletes: number;
  logger: { warn(message: string): void };
}

/**
 * Counts the rows a store deleted (acks, no-ack claims) and, every `everyDeletes`, VACUUMs the message table, so the
 * space of delivered messages is reused instead of the table growing until autovacuum's next visit. One at a time per
 * store; with SKIP_LOCKED, a store finding another process's VACUUM running skips its turn instead of waiting. Plain
 * VACUUM takes no lock that claims, inserts or acks wait for.
 */
export class TableVacuum {
  readonly #options: TableVacuumOptions;
  /** One connection, opened when a VACUUM runs and closed when idle: it never holds up claims or acks. */
  #pool: pg.Pool | undefined;
  #running: Promise<void> | undefined;
  #deletedSince = 0;
  #closed = false;

  constructor(options: TableVacuumOptions) {
    this.#options = options;
  }

  deleted(rows: number): void {
    const every = this.#options.everyDeletes;
    if (every === 0 || rows === 0 || this.#closed) return;
    this.#deletedSince += rows;
    if (this.#deletedSince < every || this.#running) return;
    this.#deletedSince = 0;
    this.#pool ??= this.#openPool();
    this.#running = this.#pool
      .query(`VACUUM (SKIP_LOCKED) ${this.#options.table}`)
      .then(
        () => undefined,
        (error: unknown) => {
          if (!this.#closed) {
            this.#options.logger.warn(`kq postgres: VACUUM ${this.#options.table} failed (${describe(error)}); autovacuum is left to reclaim its space`);
          }
        },
      )
      .finally(() => {
        this.#running = undefined;
      });
  }

  /** Waits for a running VACUUM, then closes the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#running;
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.end();
  }

  /** Drops the connection at once (a crashed process, for tests). */
  terminate(): void {
    this.#closed = true;
    const pool = this.#pool;
    this.#pool = undefined;
    void pool?.end().catch(() => undefined);
  }

  #openPool(): pg.Pool {
    const pool = new pg.Pool({ connectionString: this.#options.connectionString, max: 1, idleTimeoutMillis: 30_000 });
    pool.on('error', (error) => this.#options.logger.warn(`kq postgres: idle connection lost: ${error.message}`));
    return pool;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
