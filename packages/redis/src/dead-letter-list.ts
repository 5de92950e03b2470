import { randomUUID } from 'node:crypto';
import { decodeEnvelope, envelopePriority, priorityStep, pyJson, type DeadLetter, type DeadLetterBox, type DeadLetterQuery } from '@kq/core';
import type { RedisClient } from './connection-factory';
import type { KeyLayout } from './key-layout';

/** What `_kq.dead` holds per rejected message: the envelope exactly as it was queued, and why it was rejected. */
interface DeadRecord {
  id: string;
  queue: string;
  reason: string;
  at: number;
  envelope: string;
}

/** Most rejected messages kept; older ones are trimmed (and the trim is logged). Override with `deadLetterMax`. */
export const DEFAULT_DEAD_LETTER_MAX = 10_000;

/**
 * Rejected task messages on Redis: RabbitMQ dead-letters them, Kombu's Redis transport drops them; kq keeps them in
 * one list, `_kq.dead` (newest first, bounded), which no Celery worker consumes and `LRANGE` can read. `kq dlq`
 * lists them, sends them back to their queue (with their priority) or purges them.
 */
export class DeadLetterList implements DeadLetterBox {
  readonly #commands: () => RedisClient;
  readonly #layout: KeyLayout;
  readonly #max: number;
  readonly #warn: (message: string) => void;

  constructor(commands: () => RedisClient, layout: KeyLayout, max: number, warn: (message: string) => void) {
    this.#commands = commands;
    this.#layout = layout;
    this.#max = max;
    this.#warn = warn;
  }

  get key(): string {
    return this.#layout.key('dead');
  }

  /** Records a rejected envelope. The caller acks its claim afterwards (a crash between them keeps both: no loss). */
  async keep(queue: string, envelope: string, reason: string): Promise<void> {
    const record: DeadRecord = { id: randomUUID(), queue, reason, at: Date.now(), envelope };
    const [[, length]] = (await this.#commands().multi().lpush(this.key, pyJson(record)).ltrim(this.key, 0, this.#max - 1).exec()) as [
      [unknown, number],
    ];
    if (length > this.#max) this.#warn(`kq/redis: ${this.key} is full (${this.#max} rejected messages); dropped the oldest`);
  }

  async list(query: DeadLetterQuery = {}): Promise<DeadLetter[]> {
    const limit = query.limit ?? 100;
    const found: DeadLetter[] = [];
    for (const { record } of await this.#matching(query.queue)) {
      if (found.length >= limit) break;
      found.push(toDeadLetter(record));
    }
    return found;
  }

  async requeue(query: { queue?: string; ids?: readonly string[] } = {}): Promise<number> {
    const ids = query.ids ? new Set(query.ids) : undefined;
    let sent = 0;
    for (const { raw, record } of await this.#matching(query.queue)) {
      if (ids && !ids.has(record.id)) continue;
      const list = this.#layout.listKey(record.queue, priorityStep(envelopePriority(record.envelope), this.#layout.steps));
      const removed = this.#layout.cluster ? await this.#requeueAcrossSlots(raw, list, record.envelope) : await this.#requeueAtomically(raw, list, record.envelope);
      if (removed === 1) sent++;
      else await this.#commands().lrem(list, 1, record.envelope); // someone else took it meanwhile
    }
    return sent;
  }

  /** One transaction per entry: it is either back in its queue and gone from here, or untouched. */
  async #requeueAtomically(raw: string, list: string, envelope: string): Promise<number> {
    const [[, removed]] = (await this.#commands().multi().lrem(this.key, 1, raw).lpush(list, envelope).exec()) as [[unknown, number]];
    return removed;
  }

  /**
   * Cluster layout: the list and the queue are in different slots, so no transaction spans them. The message goes to
   * its queue first and leaves this list after, so a failure in between leaves it in both (sent twice at worst),
   * never in neither.
   */
  async #requeueAcrossSlots(raw: string, list: string, envelope: string): Promise<number> {
    await this.#commands().lpush(list, envelope);
    return this.#commands().lrem(this.key, 1, raw);
  }

  async purge(query: { queue?: string } = {}): Promise<number> {
    if (query.queue === undefined) {
      const length = await this.#commands().llen(this.key);
      await this.#commands().del(this.key);
      return length;
    }
    let purged = 0;
    for (const { raw } of await this.#matching(query.queue)) purged += await this.#commands().lrem(this.key, 1, raw);
    return purged;
  }

  /** Entries oldest first (the list is newest first), optionally of one queue; unreadable ones are skipped. */
  async #matching(queue: string | undefined): Promise<Array<{ raw: string; record: DeadRecord }>> {
    const raws = await this.#commands().lrange(this.key, 0, -1);
    const entries: Array<{ raw: string; record: DeadRecord }> = [];
    for (const raw of raws.reverse()) {
      let record: DeadRecord;
      try {
        record = JSON.parse(raw) as DeadRecord;
      } catch {
        continue;
      }
      if (typeof record.envelope !== 'string' || typeof record.queue !== 'string') continue;
      if (queue === undefined || record.queue === queue) entries.push({ raw, record });
    }
    return entries;
  }
}

function toDeadLetter(record: DeadRecord): DeadLetter {
  let headers: Record<string, unknown> = {};
  let contentType = '';
  let body: Buffer = Buffer.alloc(0);
  try {
    const message = decodeEnvelope(record.envelope, { queue: record.queue, makeTag: () => record.id });
    headers = message.headers;
    contentType = message.contentType;
    body = message.body;
  } catch {
    body = Buffer.from(record.envelope);
  }
  return { id: record.id, queue: record.queue, reason: record.reason, at: record.at, headers, contentType, body };
}
