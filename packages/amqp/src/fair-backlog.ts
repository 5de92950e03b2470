import { RoundRobinCycle } from '@kq/core';
import { Fifo } from './fifo';

/**
 * Deliveries a multi-queue consumer holds back (its prefetch window is full), one FIFO per queue, handed out
 * round-robin: the queue served last goes to the back (Kombu's `round_robin_cycle`). RabbitMQ sends each queue's
 * deliveries in bursts of up to the prefetch count, so handing them out in arrival order would serve one queue at a
 * time; this serves every non-empty queue within any k consecutive deliveries.
 */
export class FairBacklog<K, T> {
  readonly #cycle: RoundRobinCycle<K>;
  readonly #waiting = new Map<K, Fifo<T>>();
  #size = 0;

  constructor(keys: Iterable<K>) {
    this.#cycle = new RoundRobinCycle(keys);
    for (const key of this.#cycle.items) this.#waiting.set(key, new Fifo<T>());
  }

  get size(): number {
    return this.#size;
  }

  /** True when something from `key` is waiting. */
  has(key: K): boolean {
    return (this.#waiting.get(key)?.length ?? 0) > 0;
  }

  push(key: K, item: T): void {
    const fifo = this.#waiting.get(key);
    if (!fifo) throw new Error('FairBacklog: unknown key');
    fifo.push(item);
    this.#size += 1;
  }

  /** The next item in round-robin order; its queue goes to the back of the cycle. */
  shift(): T | undefined {
    if (this.#size === 0) return undefined;
    for (const key of this.#cycle.items) {
      const item = this.#waiting.get(key)?.shift();
      if (item === undefined) continue;
      this.#size -= 1;
      this.#cycle.rotate(key);
      return item;
    }
    return undefined;
  }

  /** Removes and returns everything held. */
  drain(): T[] {
    const items: T[] = [];
    for (const fifo of this.#waiting.values()) items.push(...fifo.drain());
    this.#size = 0;
    return items;
  }
}
