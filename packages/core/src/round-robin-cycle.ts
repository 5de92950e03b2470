/**
 * Queue order for fair consumption, a port of `kombu.utils.scheduling.round_robin_cycle`
 * (docs/wire.md#queues-and-priorities).
 *
 * A consumer polls the queues in `consume(n)` order and, after taking a message from queue Q, calls `rotate(Q)` so
 * that Q goes to the back and the other queues are polled first next time.
 */
export class RoundRobinCycle<T> {
  #items: T[];

  constructor(items?: Iterable<T>) {
    this.#items = items === undefined ? [] : Array.from(items);
  }

  /** Replaces the cycled items (kombu: `items[:] = it`). */
  update(items: Iterable<T>): void {
    this.#items = Array.from(items);
  }

  /** A snapshot of the items in their current order (a copy, so later rotations do not change it under you). */
  get items(): readonly T[] {
    return this.#items.slice();
  }

  get size(): number {
    return this.#items.length;
  }

  /** The first `n` items in the current order; does not rotate (kombu: `items[:n]`). */
  consume(n: number): T[] {
    return this.#items.slice(0, Math.max(0, n));
  }

  /** Moves the first occurrence of `lastUsed` to the back; does nothing if it is not cycled (kombu ignores it too). */
  rotate(lastUsed: T): void {
    const index = this.#items.indexOf(lastUsed);
    if (index === -1 || index === this.#items.length - 1) return;
    this.#items.splice(index, 1);
    this.#items.push(lastUsed);
  }
}
