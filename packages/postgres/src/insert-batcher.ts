import { encodeEnvelope, type StoredMessage } from '@kq/core';
import type pg from 'pg';
import { prepared } from './prepared-statement';
import type { TableNames } from './schema';

/** Between payloads in the one parameter that carries them all (ASCII record separator). */
const PAYLOAD_SEPARATOR = '\x1e';

interface PendingInsert {
  queue: string;
  messages: readonly StoredMessage[];
  priority: number;
  dueAt: number | null;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Inserts go out one statement at a time, in the order they were made: a message's id is its place in Kombu's
 * order, and two inserts racing on two pooled connections would take ids in either order (a publish made before a
 * batch could land after it). Inserts made while one is in flight are sent together as the next statement, so many
 * concurrent publishers cost one round trip per batch, and a lone publisher never waits.
 */
export class InsertBatcher {
  readonly #pool: pg.Pool;
  readonly #tables: TableNames;
  #pending: PendingInsert[] = [];
  /** The running send loop, while there is one. */
  #draining: Promise<void> | undefined;

  constructor(pool: pg.Pool, tables: TableNames) {
    this.#pool = pool;
    this.#tables = tables;
  }

  insert(queue: string, messages: readonly StoredMessage[], priority: number, dueAt: number | null): Promise<void> {
    if (messages.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ queue, messages, priority, dueAt, resolve, reject });
      this.#draining ??= this.#drain();
    });
  }

  /** Resolves once every insert made so far has been answered. */
  async flush(): Promise<void> {
    await this.#draining;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending;
        this.#pending = [];
        try {
          await this.#send(batch);
          for (const each of batch) each.resolve();
        } catch (error) {
          for (const each of batch) each.reject(error);
        }
      }
    } finally {
      this.#draining = undefined;
    }
  }

  /**
   * One statement for the whole batch: queue rows are created when missing (as Kombu's `_get_or_create`), then
   * every message row in the batch's order (ids from the sequence after the sort, so they follow that order).
   *
   * The payloads go as one text parameter in binary format (the bytes as they are), split on a separator by the
   * server, not as a `text[]` literal: node-postgres builds that literal by escaping every quote of every envelope
   * (a Kombu envelope is full of them) into one long concatenated string it then measures and copies (a fifth
   * of a bulk publisher's CPU in a profile of sendTasks(1000)), garbage besides. The separator never occurs in a payload: an envelope is Python-style
   * JSON with `ensure_ascii`, printable ASCII only (control characters are written `\u001e`).
   */
  #send(batch: readonly PendingInsert[]): Promise<unknown> {
    // One entry per insert (a bulk publish is one), the rows it covers numbered from 1 across the batch: per-row
    // arrays of queue names, priorities and due times cost a bulk publisher as much again as the payloads did.
    const queues: string[] = [];
    const priorities: number[] = [];
    const dues: (Date | null)[] = [];
    const lasts: number[] = [];
    const payloads: string[] = [];
    for (const each of batch) {
      queues.push(each.queue);
      priorities.push(each.priority);
      dues.push(each.dueAt === null ? null : new Date(each.dueAt));
      for (const message of each.messages) payloads.push(encodeEnvelope(message));
      lasts.push(payloads.length);
    }
    const t = this.#tables;
    return this.#pool.query(
      prepared(
        `WITH entries AS (
           SELECT queue, priority, due_at, lag(last, 1, 0) OVER (ORDER BY k) + 1 AS first, last
           FROM unnest($1::text[], $3::int[], $4::timestamptz[], $5::int[]) WITH ORDINALITY AS e(queue, priority, due_at, last, k)),
         rows AS (
           SELECT e.queue, p.payload, e.priority, e.due_at, p.n
           FROM string_to_table($2::text, E'\\x1e') WITH ORDINALITY AS p(payload, n) JOIN entries e ON p.n BETWEEN e.first AND e.last),
         created AS (
           INSERT INTO ${t.queue} (id, name) SELECT nextval('queue_id_sequence'), name FROM (SELECT DISTINCT queue AS name FROM entries) d
           ON CONFLICT (name) DO NOTHING RETURNING id, name),
         q AS (SELECT id, name FROM created UNION ALL SELECT id, name FROM ${t.queue} WHERE name IN (SELECT queue FROM entries))
         INSERT INTO ${t.message} (id, visible, "timestamp", payload, version, queue_id, kq_priority, kq_due_at)
         SELECT nextval('message_id_sequence'), r.due_at IS NULL, NULL, r.payload, 1, (SELECT id FROM q WHERE q.name = r.queue LIMIT 1), r.priority, r.due_at
         FROM rows r ORDER BY r.n`,
        [queues, Buffer.from(payloads.join(PAYLOAD_SEPARATOR)), priorities, dues, lasts],
      ),
    );
  }
}
