/** A double-ended queue on a growable ring buffer: O(1) at both ends, unlike Array#shift on long arrays. */
export class MessageDeque<T> {
  #items: (T | undefined)[] = new Array<T | undefined>(16);
  #head = 0;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  pushBack(item: T): void {
    this.#grow();
    this.#items[(this.#head + this.#length) & (this.#items.length - 1)] = item;
    this.#length++;
  }

  pushFront(item: T): void {
    this.#grow();
    this.#head = (this.#head - 1) & (this.#items.length - 1);
    this.#items[this.#head] = item;
    this.#length++;
  }

  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head = (this.#head + 1) & (this.#items.length - 1);
    this.#length--;
    return item;
  }

  clear(): number {
    const count = this.#length;
    this.#items = new Array<T | undefined>(16);
    this.#head = 0;
    this.#length = 0;
    return count;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = 0; i < this.#length; i++) yield this.#items[(this.#head + i) & (this.#items.length - 1)] as T;
  }

  #grow(): void {
    if (this.#length < this.#items.length) return;
    // Capacity stays a power of two so index wrapping is a mask.
    const next = new Array<T | undefined>(this.#items.length * 2);
    for (let i = 0; i < this.#length; i++) next[i] = this.#items[(this.#head + i) & (this.#items.length - 1)];
    this.#items = next;
    this.#head = 0;
  }
}
