import type pg from 'pg';
import type { TableNames } from './schema';

export interface LeaseKeeperOptions {
  tables: TableNames;
  /** The store's name in `kq_holder`. */
  holder: string;
  leaseMs: number;
  leaseRenewIntervalMs: number;
  sweepIntervalMs: number;
  logger: { warn(message: string): void };
}

/**
 * The upkeep of claims and delays: a heartbeat that extends every lease the store holds while it holds any, a sweep
 * that returns expired leases (anyone's: a crashed consumer's) to the head of their queues, and the promotion of due
 * delayed rows. All of it runs on the claim connections, whose commits need not wait for the disk.
 */
export class LeaseKeeper {
  readonly #options: LeaseKeeperOptions;
  readonly #pool: () => pg.Pool | undefined;
  #renewTimer: NodeJS.Timeout | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  /** Claims handed out and not yet settled: the heartbeat runs while there are any. */
  #held = 0;
  /** Epoch ms of the earliest delayed message known to be waiting (0: look now). */
  #nextDueAt = 0;

  /** `pool`: the claim connections, undefined once the store is closed. */
  constructor(options: LeaseKeeperOptions, pool: () => pg.Pool | undefined) {
    this.#options = options;
    this.#pool = pool;
  }

  start(): void {
    this.#sweepTimer = setInterval(() => void this.#sweep(), this.#options.sweepIntervalMs);
    this.#sweepTimer.unref();
  }

  stop(): void {
    if (this.#renewTimer) clearInterval(this.#renewTimer);
    if (this.#sweepTimer) clearInterval(this.#sweepTimer);
    this.#renewTimer = undefined;
    this.#sweepTimer = undefined;
    this.#held = 0;
  }

  hold(count: number): void {
    if (count === 0) return;
    this.#held += count;
    if (!this.#renewTimer) {
      this.#renewTimer = setInterval(() => void this.#renew(), this.#options.leaseRenewIntervalMs);
      this.#renewTimer.unref();
    }
  }

  release(): void {
    this.#held = Math.max(0, this.#held - 1);
    if (this.#held === 0 && this.#renewTimer) {
      clearInterval(this.#renewTimer);
      this.#renewTimer = undefined;
    }
  }

  /** A delayed message was pushed (here or, through a NOTIFY, elsewhere), due at this epoch ms. */
  noteDue(dueAt: number): void {
    this.#nextDueAt = Math.min(this.#nextDueAt || dueAt, dueAt);
  }

  /** Milliseconds until the earliest delayed message known is due (Infinity: none known). */
  dueIn(): number {
    return this.#nextDueAt > 0 ? Math.max(0, this.#nextDueAt - Date.now()) : Infinity;
  }

  /**
   * Promotes due delayed rows when some may be due; undefined (nothing to wait for) otherwise, so a claim that has
   * nothing to promote reaches its own statement without giving up its turn.
   */
  promoteIfDue(): Promise<void> | undefined {
    return this.#nextDueAt <= Date.now() ? this.#promote() : undefined;
  }

  /** The heartbeat: one statement extends every lease this store holds (found through the lease index). */
  async #renew(): Promise<void> {
    try {
      await this.#pool()?.query(
        `UPDATE ${this.#options.tables.message} SET kq_lease_until = now() + make_interval(secs => $2::float8 / 1000)
         WHERE kq_lease_until IS NOT NULL AND kq_holder = $1 AND NOT visible`,
        [this.#options.holder, this.#options.leaseMs],
      );
    } catch (error) {
      this.#options.logger.warn(`kq postgres: could not renew leases (${describe(error)}); retrying in ${this.#options.leaseRenewIntervalMs} ms`);
    }
  }

  /** Returns rows whose lease ran out to the head of their queues, marked redelivered; promotes due delays. */
  async #sweep(): Promise<void> {
    const pool = this.#pool();
    if (!pool) return;
    try {
      await pool.query(
        `UPDATE ${this.#options.tables.message} SET visible = true, kq_redelivered = true, kq_holder = NULL, kq_claim = NULL, kq_lease_until = NULL
         WHERE kq_lease_until < now()`,
      );
      await this.#promote();
    } catch (error) {
      if (this.#pool()) this.#options.logger.warn(`kq postgres: lease sweep failed (${describe(error)}); it runs again in ${this.#options.sweepIntervalMs} ms`);
    }
  }

  /** Makes due delayed rows visible (the trigger wakes consumers) and learns when the next one is due. */
  async #promote(): Promise<void> {
    const pool = this.#pool();
    if (!pool) return;
    const t = this.#options.tables;
    const { rows } = await pool.query<{ next_in_ms: number | null }>(
      `WITH promoted AS (UPDATE ${t.message} SET visible = true, kq_due_at = NULL WHERE kq_due_at <= now() RETURNING 1)
       SELECT (SELECT extract(epoch FROM min(kq_due_at) - now()) * 1000 FROM ${t.message} WHERE kq_due_at > now())::float8 AS next_in_ms,
              (SELECT count(*) FROM promoted) AS promoted`,
    );
    const next = rows[0]?.next_in_ms;
    // No delayed row left: look again at the next sweep, or sooner when a NOTIFY names a due time.
    this.#nextDueAt = next === null || next === undefined ? Date.now() + this.#options.sweepIntervalMs : Date.now() + Math.max(1, next);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
