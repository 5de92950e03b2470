import type pg from 'pg';
import { prepared } from './prepared-statement';
import type { TableNames } from './schema';

interface PendingAck {
  id: number;
  token: string;
  resolve: (settled: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Acks of one event-loop turn go out as one DELETE: a worker acking a burst of tasks pays one round trip, not one
 * per task. Each ack resolves to whether its row was still held under its claim token (false: the lease was taken
 * back, the message went back to its queue).
 */
export class AckBatcher {
  readonly #pool: pg.Pool;
  readonly #tables: TableNames;
  #pending: PendingAck[] = [];
  #scheduled = false;
  #inFlight: Promise<void> = Promise.resolve();
  readonly #onDeleted: (rows: number) => void;

  /** `onDeleted`: how many rows each batch deleted (the store vacuums after enough). */
  constructor(pool: pg.Pool, tables: TableNames, onDeleted: (rows: number) => void = () => undefined) {
    this.#pool = pool;
    this.#tables = tables;
    this.#onDeleted = onDeleted;
  }

  ack(id: number, token: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.#pending.push({ id, token, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => void this.#send());
      }
    });
  }

  /** Resolves once every ack made so far has been sent and answered. */
  async flush(): Promise<void> {
    if (this.#scheduled) await this.#send();
    await this.#inFlight;
  }

  #send(): Promise<void> {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return this.#inFlight;
    const sent = this.#pool
      .query<{ id: number }>(
        prepared(
          `DELETE FROM ${this.#tables.message} m USING unnest($1::int[], $2::text[]) AS a(id, token)
           WHERE m.id = a.id AND m.kq_claim = a.token RETURNING m.id`,
          [batch.map((ack) => ack.id), batch.map((ack) => ack.token)],
        ),
      )
      .then(
        ({ rows }) => {
          const done = new Set(rows.map((row) => row.id));
          for (const ack of batch) ack.resolve(done.has(ack.id));
          this.#onDeleted(rows.length);
        },
        (error: unknown) => {
          for (const ack of batch) ack.reject(error);
        },
      );
    this.#inFlight = sent;
    return sent;
  }
}
