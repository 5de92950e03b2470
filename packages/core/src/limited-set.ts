import { brandClass } from './class-brand';
import { DecodeError } from './errors';
import { comparePythonStrings } from './python-string-order';

/** Options of a {@link LimitedSet}; all limits are off by default, like Python's. */
export interface LimitedSetOptions {
  /** Maximum number of items; the oldest are dropped beyond it. 0 = unlimited. */
  maxlen?: number;
  /** Seconds after which an item may be purged. 0 = never. Expiry is lazy (see {@link LimitedSet.purge}). */
  expires?: number;
  /** Expired items are only purged while the set holds more than this many items. */
  minlen?: number;
  /**
   * Current time in seconds on a monotonic clock. The default reads the same `CLOCK_MONOTONIC` as Python's
   * `time.monotonic()`, so timestamps exchanged with Python workers on the same host are comparable.
   */
  clock?: () => number;
}

/**
 * Wire form of a LimitedSet, as Python's `LimitedSet._data`: `{item: [insertedAt, item]}`
 * (docs/wire.md#mingle-heartbeats-and-gossip). It is what mingle's `hello` carries under `revoked`.
 */
export type LimitedSetWire = { [item: string]: [timestamp: number, item: string] };

interface Entry<T> {
  readonly t: number;
  readonly item: T;
}

// performance.now() and process.hrtime read the same monotonic clock (libuv's hrtime: CLOCK_MONOTONIC on Linux, as
// Python's time.monotonic()); the offset between them is read once, so a reading makes no BigInt (one per task run).
const MONOTONIC_OFFSET_MS = Number(process.hrtime.bigint()) / 1e6 - performance.now();
const monotonicSeconds = (): number => (MONOTONIC_OFFSET_MS + performance.now()) / 1000;

/** Heap entries may outnumber live items by this percentage before the heap is rebuilt (Python uses 15 too). */
const MAX_HEAP_OVERLOAD_PERCENT = 15;

/**
 * A set that forgets: a port of `celery.utils.collections.LimitedSet`, used for revoked task ids
 * (docs/wire.md#mingle-heartbeats-and-gossip).
 *
 * * `add` (re)sets the item's timestamp; when the set then holds `maxlen` items or more it is purged.
 * * `purge` drops the oldest items while there are more than `maxlen`, then, if `expires` is set, drops the oldest
 *   items that have expired while there are more than `minlen`. Expiry is lazy: `has()` does not look at timestamps.
 * * Iteration is in ascending insertion time (ties broken by item, as Python compares `(timestamp, item)` tuples).
 *
 * Like Python it keeps a Map from item to its entry plus a binary min-heap of entries; re-adding or discarding an
 * item leaves a stale heap entry that is skipped when it surfaces, and the heap is rebuilt once stale entries pass
 * 15 %. A heap rather than Map order is needed because timestamps merged from other workers are not monotonic.
 */
export class LimitedSet<T extends string = string> implements Iterable<T> {
  readonly maxlen: number;
  readonly expires: number;
  readonly minlen: number;
  readonly #clock: () => number;
  #data = new Map<T, Entry<T>>();
  #heap: Entry<T>[] = [];

  constructor(options: LimitedSetOptions = {}) {
    this.maxlen = checkLimit('maxlen', options.maxlen ?? 0, true);
    this.minlen = checkLimit('minlen', options.minlen ?? 0, true);
    this.expires = checkLimit('expires', options.expires ?? 0, false);
    // Python also insists on minlen <= maxlen when maxlen is 0 (unlimited), which forbids a useful combination
    // (expire, but keep at least minlen); that case is allowed here.
    if (this.maxlen > 0 && this.minlen > this.maxlen) {
      throw new RangeError(`LimitedSet minlen (${this.minlen}) must not exceed maxlen (${this.maxlen}).`);
    }
    this.#clock = options.clock ?? monotonicSeconds;
  }

  /** Builds a set from the wire form (see {@link update} for the validation). */
  static fromWire<T extends string = string>(
    wire: LimitedSetWire | Readonly<Record<string, unknown>>,
    options?: LimitedSetOptions,
  ): LimitedSet<T> {
    const set = new LimitedSet<T>(options);
    set.update(wire);
    return set;
  }

  get size(): number {
    return this.#data.size;
  }

  /**
   * Adds `item`, or moves it to `timestamp` (default: now) if present. As in Python (`now or time.monotonic()`), a
   * timestamp of 0 also means now.
   */
  add(item: T, timestamp?: number): void {
    const t = timestamp || this.#clock();
    if (this.#data.has(item)) this.discard(item);
    const entry: Entry<T> = { t, item };
    this.#data.set(item, entry);
    this.#push(entry);
    // Purged as of now, as Python's purge() reads the clock: the clock already read here when no timestamp was given.
    if (this.maxlen && this.#data.size >= this.maxlen) this.purge(timestamp ? undefined : t);
  }

  /** Membership only: an expired item that has not been purged yet is still reported (Python does the same). */
  has(item: T): boolean {
    return this.#data.has(item);
  }

  discard(item: T): void {
    if (!this.#data.delete(item)) return;
    const overload = (this.#heap.length * 100) / Math.max(this.#data.size, 1) - 100;
    if (overload >= MAX_HEAP_OVERLOAD_PERCENT) this.#rebuildHeap();
  }

  clear(): void {
    this.#data.clear();
    this.#heap = [];
  }

  /**
   * Merges `other` into this set, like Python's `LimitedSet.update`:
   *
   * * another LimitedSet: its items and timestamps are copied (overriding ours), then this set is purged;
   * * the wire form `{item: [timestamp, item]}` (or `{item: timestamp}`): each item is added with its timestamp;
   * * any other iterable: each item is added with the current time.
   *
   * A wire value must be a number or an array whose first element is a number, otherwise a `DecodeError` is thrown
   * and nothing is added (Python raises `ValueError` after adding the entries before the bad one). Python also
   * rejects integral timestamps because its JSON parser makes them `int`; JSON.parse cannot tell `5` from `5.0`, so
   * integral values are accepted here.
   */
  update(other: LimitedSet<T> | Iterable<T> | LimitedSetWire | Readonly<Record<string, unknown>>): void {
    if (other instanceof LimitedSet) {
      if (other.size === 0) return;
      if (#data in other) {
        for (const [item, entry] of other.#data) this.#data.set(item, { t: entry.t, item });
      } else {
        // A LimitedSet of another copy of @kq/core (see brandClass) keeps its #data to itself: read its wire form.
        const wire = (other as LimitedSet<T>).toWire(); // `#data in` narrowed `other` to never: TS has one class
        for (const [item, value] of Object.entries(wire)) this.#data.set(item as T, { t: wireTimestampOf(item, value), item: item as T });
      }
      this.#rebuildHeap();
      this.purge();
      return;
    }
    if (typeof other === 'string') {
      // A string is iterable: Python would add each character. That is never what the caller meant.
      throw new TypeError('LimitedSet.update() needs an iterable of items or a wire object, not a single string.');
    }
    if (isIterable<T>(other)) {
      for (const item of other) this.add(item);
      return;
    }
    const entries = Object.entries(other);
    const timestamps = entries.map(([item, value]) => wireTimestampOf(item, value));
    for (let i = 0; i < entries.length; i++) this.add((entries[i] as [T, unknown])[0], timestamps[i]);
  }

  /**
   * Drops the oldest items while the set is over `maxlen`, then (if `expires` is set) the oldest expired items while
   * it holds more than `minlen`. `now` defaults to the clock (0 also means now, as in Python).
   */
  purge(now?: number): void {
    const at = now || this.#clock();
    if (this.maxlen) {
      while (this.#data.size > this.maxlen) this.pop();
    }
    if (this.expires) {
      while (this.#data.size > this.minlen) {
        const head = this.#liveHead();
        if (head === undefined || head.t + this.expires > at) break;
        this.pop();
      }
    }
  }

  /** Removes and returns the oldest item, or `undefined` when the set is empty. */
  pop(): T | undefined {
    while (this.#heap.length > 0) {
      const entry = this.#popHeap();
      if (this.#data.get(entry.item) !== entry) continue; // stale: discarded or re-added since
      this.#data.delete(entry.item);
      return entry.item;
    }
    return undefined;
  }

  /** Items in ascending insertion time. */
  *[Symbol.iterator](): IterableIterator<T> {
    const entries = Array.from(this.#data.values()).sort(compareEntries);
    for (const entry of entries) yield entry.item;
  }

  /**
   * The wire form `{item: [timestamp, item]}`, keys in the order items were (last) added, as Python's dict.
   *
   * An integral timestamp is sent as `t + 1e-6`: `JSON.stringify(5.0)` is `5`, which Python parses as `int` and then
   * rejects (docs/wire.md#mingle-heartbeats-and-gossip). (JavaScript objects also list integer-like keys such as `"42"`
   * first; order on the wire carries no meaning, receivers sort by timestamp.)
   */
  toWire(): LimitedSetWire {
    const wire: LimitedSetWire = {};
    for (const [item, entry] of this.#data) {
      const value: [number, string] = [floatForPython(entry.t), item];
      if (item === '__proto__') Object.defineProperty(wire, item, { value, enumerable: true, writable: true, configurable: true });
      else wire[item] = value;
    }
    return wire;
  }

  toJSON(): LimitedSetWire {
    return this.toWire();
  }

  #liveHead(): Entry<T> | undefined {
    for (;;) {
      const head = this.#heap[0];
      if (head === undefined || this.#data.get(head.item) === head) return head;
      this.#popHeap();
    }
  }

  #rebuildHeap(): void {
    this.#heap = Array.from(this.#data.values());
    for (let i = (this.#heap.length >> 1) - 1; i >= 0; i--) this.#siftDown(i);
  }

  #push(entry: Entry<T>): void {
    const heap = this.#heap;
    let i = heap.push(entry) - 1;
    // Timestamps normally grow, so this loop usually stops at once and add() stays O(1).
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as Entry<T>;
      if (compareEntries(p, entry) <= 0) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = entry;
  }

  #popHeap(): Entry<T> {
    const heap = this.#heap;
    const top = heap[0] as Entry<T>;
    const last = heap.pop() as Entry<T>;
    if (heap.length > 0) {
      heap[0] = last;
      this.#siftDown(0);
    }
    return top;
  }

  #siftDown(start: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const entry = heap[start] as Entry<T>;
    let i = start;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (right < n && compareEntries(heap[right] as Entry<T>, heap[child] as Entry<T>) < 0) child = right;
      const c = heap[child] as Entry<T>;
      if (compareEntries(c, entry) >= 0) break;
      heap[i] = c;
      i = child;
    }
    heap[i] = entry;
  }
}
brandClass(LimitedSet, '@kq/core:LimitedSet');

function checkLimit(name: string, value: number, integer: boolean): number {
  if (!Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
    throw new RangeError(`LimitedSet ${name} must be a ${integer ? 'non-negative integer' : 'non-negative number'}, got ${value}.`);
  }
  return value;
}

function isIterable<T>(value: object): value is Iterable<T> {
  return typeof (value as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function';
}

/** Validates one wire value like Python's `LimitedSet.update(dict)` and returns its timestamp. */
function wireTimestampOf(item: string, value: unknown): number {
  const inserted = Array.isArray(value) ? (value[0] as unknown) : value;
  if (typeof inserted === 'number' && Number.isFinite(inserted)) return inserted;
  const shown = typeof inserted === 'string' ? inserted : JSON.stringify(inserted) ?? String(inserted);
  throw new DecodeError(
    `Expecting float timestamp, got type ${pythonTypeName(inserted)} with value: ${shown} ` +
      `(LimitedSet wire entry ${JSON.stringify(item)}; the wire form is {item: [timestamp, item]}).`,
  );
}

function pythonTypeName(value: unknown): string {
  const name =
    value === null || value === undefined
      ? 'NoneType'
      : typeof value === 'number'
        ? 'float'
        : typeof value === 'string'
          ? 'str'
          : typeof value === 'boolean'
            ? 'bool'
            : Array.isArray(value)
              ? 'list'
              : typeof value === 'object'
                ? 'dict'
                : typeof value;
  return `<class '${name}'>`;
}

/**
 * A number whose JSON text has a decimal point or exponent, so Python parses it as `float`. Adding 1e-6 keeps the
 * value readable; beyond ~1.7e10 that is lost to rounding, so the next representable double is used instead.
 * (From 2**52 on every double is an integer; no such timestamp occurs on a monotonic clock.)
 */
function floatForPython(t: number): number {
  if (!Number.isInteger(t)) return t;
  const shifted = t + 1e-6;
  return Number.isInteger(shifted) ? nextUp(t) : shifted;
}

function nextUp(x: number): number {
  if (x === 0) return Number.MIN_VALUE; // also for -0, whose bit pattern would step the wrong way
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  view.setBigUint64(0, x >= 0 ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}

function compareEntries<T extends string>(a: Entry<T>, b: Entry<T>): number {
  if (a.t !== b.t) return a.t < b.t ? -1 : 1;
  return comparePythonStrings(a.item, b.item);
}
