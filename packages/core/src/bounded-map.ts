/**
 * A Map that keeps at most `limit` entries: setting a key that makes it one too many drops the oldest entry (the one
 * whose key has gone longest since it was set while absent; delete and set again to make an entry the newest). For
 * the bounded buffers of results, replies and monitored tasks.
 *
 * The oldest is found with one iterator kept across calls, not by reading the Map from its front each time: V8 keeps a
 * deleted entry's slot until the table is rebuilt, so a fresh iterator walks every entry dropped since (6 µs a drop
 * at 10,000 entries, 26 µs at 100,000), where this one resumes where it stopped (0.3 µs). A Map iterator skips
 * entries deleted after it was made and reaches entries added after it, so every live entry is ahead of it.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  readonly limit: number;
  #oldest: Iterator<K> | undefined;

  constructor(limit: number) {
    super();
    this.limit = Math.max(0, Math.trunc(limit));
  }

  override set(key: K, value: V): this {
    super.set(key, value);
    while (this.size > this.limit) {
      this.#oldest ??= super.keys();
      const next = this.#oldest.next();
      if (next.done) {
        // Never while entries are ahead; a fresh iterator starts from the front should it happen.
        this.#oldest = undefined;
        continue;
      }
      super.delete(next.value);
    }
    return this;
  }
}
