import type { PriorityOrder } from '@kq/core';

export type SettleAction = 'ack' | 'requeue' | 'reject';

/** A message the model knows is in a queue or held, with the priority bucket it is served from. */
interface ModelMessage {
  readonly id: string;
  readonly queue: number;
  readonly priority: number;
}

/**
 * Messages of one priority in one queue. `fresh` were never delivered and must come out in publish order;
 * `returned` were delivered and came back (requeue, channel close). Where they go back is transport-specific
 * (AMQP: head; Kombu's virtual transports: tail on requeue, head on close), so the model lets any returned
 * message be served next — but never a fresh one out of turn.
 */
interface Bucket {
  readonly fresh: string[];
  readonly returned: Set<string>;
}

/** What the transport may deliver next from a queue: the allowed ids, each with the `redelivered` flag it must carry. */
export type AllowedNext = ReadonlyMap<string, boolean>;

/**
 * The reference model of the fast-check test: a few queues, each a set of priority buckets, plus the deliveries
 * currently held. Deliberately independent of `MemoryStore` so the two can disagree.
 */
export class QueueModel {
  readonly #queues: Array<Map<number, Bucket>>;
  readonly #order: PriorityOrder | null;
  readonly #held: ModelMessage[] = [];

  constructor(queueCount: number, order: PriorityOrder | null) {
    this.#queues = Array.from({ length: queueCount }, () => new Map<number, Bucket>());
    this.#order = order;
  }

  /** Deliveries handed out and not yet settled, oldest first. */
  get held(): readonly ModelMessage[] {
    return this.#held;
  }

  publish(queue: number, id: string, priority: number | undefined): void {
    this.#bucket(queue, this.#effectivePriority(priority)).fresh.push(id);
  }

  /** The ids the next delivery from `queue` may carry; empty when the queue is empty. */
  allowedNext(queue: number): AllowedNext {
    const bucket = this.#servedBucket(queue);
    const allowed = new Map<string, boolean>();
    if (!bucket) return allowed;
    const head = bucket.fresh[0];
    if (head !== undefined) allowed.set(head, false);
    for (const id of bucket.returned) allowed.set(id, true);
    return allowed;
  }

  /** Removes `id` (which must be allowed) from `queue`; returns the message so it can be held or dropped. */
  take(queue: number, id: string): ModelMessage {
    for (const [priority, bucket] of this.#queues[queue] ?? []) {
      if (bucket.fresh[0] === id) {
        bucket.fresh.shift();
        return { id, queue, priority };
      }
      if (bucket.returned.delete(id)) return { id, queue, priority };
    }
    throw new Error(`model: ${id} is not at the head of queue ${queue}`);
  }

  hold(message: ModelMessage): void {
    this.#held.push(message);
  }

  /** Settles the held delivery at `index`: ack and reject forget it (no dead-letter exchange), requeue returns it. */
  settleHeld(index: number, action: SettleAction): ModelMessage {
    const [message] = this.#held.splice(index, 1);
    if (!message) throw new Error(`model: no held delivery at ${index}`);
    if (action === 'requeue') this.returnMessage(message);
    return message;
  }

  returnMessage(message: ModelMessage): void {
    this.#bucket(message.queue, message.priority).returned.add(message.id);
  }

  /** The channel closed: every held delivery goes back to its queue. */
  closeChannel(): void {
    for (const message of this.#held.splice(0)) this.returnMessage(message);
  }

  /** Removes the ready messages of `queue` (held ones survive); returns how many. */
  purge(queue: number): number {
    const count = this.depth(queue);
    this.#queues[queue]?.clear();
    return count;
  }

  /** Ready messages in `queue`. */
  depth(queue: number): number {
    let count = 0;
    for (const bucket of this.#queues[queue]?.values() ?? []) count += bucket.fresh.length + bucket.returned.size;
    return count;
  }

  /** Every ready id in `queue`, in no particular order. */
  contents(queue: number): string[] {
    return [...(this.#queues[queue]?.values() ?? [])].flatMap((bucket) => [...bucket.fresh, ...bucket.returned]);
  }

  #effectivePriority(priority: number | undefined): number {
    return this.#order === null ? 0 : (priority ?? 0);
  }

  #servedBucket(queue: number): Bucket | undefined {
    const candidates = [...(this.#queues[queue] ?? new Map<number, Bucket>()).entries()].filter(
      ([, bucket]) => bucket.fresh.length + bucket.returned.size > 0,
    );
    if (candidates.length === 0) return undefined;
    candidates.sort(([a], [b]) => (this.#order === 'higher-first' ? b - a : a - b));
    return candidates[0]?.[1];
  }

  #bucket(queue: number, priority: number): Bucket {
    const buckets = this.#queues[queue];
    if (!buckets) throw new Error(`model: no queue ${queue}`);
    let bucket = buckets.get(priority);
    if (!bucket) {
      bucket = { fresh: [], returned: new Set() };
      buckets.set(priority, bucket);
    }
    return bucket;
  }
}
