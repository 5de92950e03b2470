/** Options of {@link RecentIds}. */
export interface RecentIdsOptions {
  /** Most ids kept; the oldest go beyond it. */
  maxlen: number;
  /** Seconds an id is kept; older ones go as new ones come. */
  expires: number;
  /** Current time in milliseconds on a clock that never goes back (default: `performance.now()`). */
  clock?: () => number;
}

/**
 * A bounded set of the ids of recent local events (the tasks that succeeded here), in the order they were added. Its
 * timestamps all come from one monotonic clock, so the oldest id is always the first added: a queue of adds, dropped
 * from its front, where core's `LimitedSet` (which merges timestamps from other workers, as Celery's does) keeps a
 * heap and once full pays a heap pop and an expiry look on every add. Not a Map's own order either: V8 leaves a
 * deleted entry's slot in place until the table is rebuilt, so reading a Map from its front after dropping the oldest
 * walks every slot dropped since (6 µs an add at 10,000 ids, against 0.3 µs here).
 */
export class RecentIds {
  readonly maxlen: number;
  readonly #expiresMs: number;
  readonly #clock: () => number;
  /** Each id kept, with the sequence number of its latest add. */
  readonly #latest = new Map<string, number>();
  /** Every add, oldest first from `#head`: an id added again leaves its earlier entry behind, skipped when reached. */
  #ids: string[] = [];
  #seqs: number[] = [];
  #times: number[] = [];
  #head = 0;
  #seq = 0;

  constructor(options: RecentIdsOptions) {
    this.maxlen = options.maxlen;
    this.#expiresMs = options.expires * 1000;
    this.#clock = options.clock ?? (() => performance.now());
  }

  get size(): number {
    return this.#latest.size;
  }

  /** Adds `id` as the newest (its earlier add, if any, no longer counts), then drops what is past `maxlen` or expired. */
  add(id: string): void {
    const now = this.#clock();
    const seq = ++this.#seq;
    this.#latest.set(id, seq);
    this.#ids.push(id);
    this.#seqs.push(seq);
    this.#times.push(now);
    const limit = now - this.#expiresMs;
    while (this.#head < this.#ids.length) {
      const oldest = this.#ids[this.#head] as string;
      if (this.#latest.get(oldest) === this.#seqs[this.#head]) {
        if (this.#latest.size <= this.maxlen && (this.#times[this.#head] as number) > limit) break;
        this.#latest.delete(oldest);
      }
      this.#head++;
    }
    // What was dropped from the front is let go once it is over half the arrays.
    if (this.#head > 1024 && this.#head * 2 > this.#ids.length) {
      this.#ids = this.#ids.slice(this.#head);
      this.#seqs = this.#seqs.slice(this.#head);
      this.#times = this.#times.slice(this.#head);
      this.#head = 0;
    }
  }

  has(id: string): boolean {
    return this.#latest.has(id);
  }
}
