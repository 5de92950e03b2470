import Denque from 'denque';

interface Lane<K, T> {
  readonly key: K;
  readonly items: Denque<T>;
}

/**
 * Deliveries a multi-queue consumer holds back (its prefetch window is full), one FIFO per queue, handed out
 * round-robin: the queue served last goes to the back (Kombu's `round_robin_cycle`). RabbitMQ sends each queue's
 * deliveries in bursts of up to the prefetch count, so handing them out in arrival order would serve one queue at a
 * time; this serves every non-empty queue within any k consecutive deliveries.
 *
 * Every delivery passes through here, so `push` and `shift` allocate nothing (with one queue, `shift` is a FIFO's).
 */
export class FairBacklog<K, T> {
  /** The queues in round-robin order: the next served is the first with something waiting. */
  readonly #order: Array<Lane<K, T>>;
  readonly #lanes = new Map<K, Lane<K, T>>();
  #size = 0;

  constructor(keys: Iterable<K>) {
    for (const key of keys) if (!this.#lanes.has(key)) this.#lanes.set(key, { key, items: new Denque<T>() });
    this.#order = [...this.#lanes.values()];
  }

  get size(): number {
    return this.#size;
  }

  /** True when something from `key` is waiting. */
  has(key: K): boolean {
    return (this.#lanes.get(key)?.items.length ?? 0) > 0;
  }

  push(key: K, item: T): void {
    const lane = this.#lanes.get(key);
    if (!lane) throw new Error('FairBacklog: unknown key');
    lane.items.push(item);
    this.#size += 1;
  }

  /** The next item in round-robin order; its queue goes to the back of the cycle. */
  shift(): T | undefined {
    if (this.#size === 0) return undefined;
    const order = this.#order;
    for (let index = 0; index < order.length; index++) {
      const lane = order[index] as Lane<K, T>;
      if (lane.items.length === 0) continue;
      this.#size -= 1;
      if (index < order.length - 1) {
        order.splice(index, 1);
        order.push(lane);
      }
      return lane.items.shift();
    }
    return undefined;
  }

  /** Removes and returns everything held. */
  drain(): T[] {
    const items: T[] = [];
    for (const lane of this.#lanes.values()) {
      items.push(...lane.items.toArray());
      lane.items.clear();
    }
    this.#size = 0;
    return items;
  }
}
