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
  /** At most this many batches in flight (the pool's connections): acks made meanwhile join the next one. */
  readonly #maxInFlight: number;
  #pending: PendingAck[] = [];
  #scheduled = false;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #onDeleted: (rows: number) => void;

  /**
   * `connections`: the pool's size — with every connection busy, acks queue here and go out as one
   * batch when one returns, not as one queued statement per event-loop turn. `onDeleted`: how many rows each batch
   * deleted (the store vacuums after enough).
   */
  constructor(pool: pg.Pool, tables: TableNames, connections: number, onDeleted: (rows: number) => void = () => undefined) {
    this.#pool = pool;
    this.#tables = tables;
    this.#maxInFlight = Math.max(1, connections);
    this.#onDeleted = onDeleted;
  }

  ack(id: number, token: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.#pending.push({ id, token, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          this.#send();
        });
      }
    });
  }

  /** Resolves once every ack made so far has been sent and answered. */
  async flush(): Promise<void> {
    for (;;) {
      this.#send();
      if (this.#inFlight.size === 0) return;
      await Promise.allSettled([...this.#inFlight]);
    }
  }

  #send(): void {
    if (this.#pending.length === 0 || this.#inFlight.size >= this.#maxInFlight) return;
    const batch = this.#pending;
    this.#pending = [];
    const sent: Promise<void> = this.#pool
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
      )
      .finally(() => {
        this.#inFlight.delete(sent);
        // What queued while every connection was busy goes out now, as one batch.
        if (!this.#scheduled) this.#send();
      });
    this.#inFlight.add(sent);
  }
}
