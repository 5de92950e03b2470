/**
 * A first-in first-out queue with O(1) push and shift (an array's `shift` is O(n): with tens of thousands of
 * publishes waiting for a channel to drain, that made the publisher quadratic).
 */
export class Fifo<T> {
  #items: Array<T | undefined> = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** Puts an item back at the front. */
  unshift(item: T): void {
    if (this.#head > 0) this.#items[--this.#head] = item;
    else this.#items.unshift(item);
  }

  peek(): T | undefined {
    return this.#items[this.#head];
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined;
    // Compact once the consumed prefix dominates, so memory follows the live length.
    if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Removes and returns everything, oldest first. */
  drain(): T[] {
    const items = this.#items.slice(this.#head) as T[];
    this.#items = [];
    this.#head = 0;
    return items;
  }

  /** Keeps only the items for which `keep` returns true, in order. */
  retain(keep: (item: T) => boolean): void {
    this.#items = (this.#items.slice(this.#head) as T[]).filter(keep);
    this.#head = 0;
  }
}
