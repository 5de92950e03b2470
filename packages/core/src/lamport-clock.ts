import { comparePythonStrings } from './python-string-order';

/**
 * Lamport logical clock, a port of `kombu.clocks.LamportClock` (docs/wire.md#lamport-clocks).
 *
 * `forward()` before sending, `adjust(received)` on receipt. JavaScript is single-threaded, so the mutex Python
 * wraps around both operations is unnecessary here.
 */
export class LamportClock {
  #value: number;

  constructor(initial = 0) {
    this.#value = sanitize(initial);
  }

  /** The current value (an integer, starts at 0). */
  get value(): number {
    return this.#value;
  }

  /** Advances the clock by one and returns the new value: the stamp to put on an outgoing message. */
  forward(): number {
    this.#value += 1;
    return this.#value;
  }

  /**
   * Synchronises with a received stamp: `value = max(value, other) + 1`; returns the new value.
   *
   * Headers come from other processes, so the input is not trusted: NaN, ±Infinity, non-numbers and values of
   * 2**53 − 1 or more count as 0 (one bad header must not poison the clock forever), and fractions are floored so the
   * value stays an integer while still exceeding `other`.
   */
  adjust(other: number): number {
    this.#value = Math.max(this.#value, sanitize(other)) + 1;
    return this.#value;
  }

  /** Same as `String(clock.value)`, like Python's `str(clock)`. */
  toString(): string {
    return String(this.#value);
  }

  toJSON(): number {
    return this.#value;
  }

  /**
   * Picks the leader of an election, exactly like kombu's `LamportClock.sort_heap`.
   *
   * `heap` must already be sorted; each entry is `[clock, processId, ...rest]`. When the first two clocks are equal,
   * consecutive pairs are walked while their clocks stay equal, collecting the *first* element of each pair (so the
   * last member of the equal run is never a candidate — a kombu quirk reproduced on purpose so that Python and kq
   * workers elect the same leader), and the collected entry with the smallest id wins (first one on equal ids).
   * Otherwise `heap[0]` wins.
   *
   * Python indexes `h[1]` unconditionally and crashes with `IndexError` on a one-element heap
   * (docs/wire.md#mingle-heartbeats-and-gossip); here an empty heap gives `undefined` and a single entry is its own
   * winner.
   */
  static sortHeap<T extends readonly [number, string, ...unknown[]]>(heap: readonly T[]): T | undefined {
    const first = heap[0];
    const second = heap[1];
    if (first === undefined || second === undefined) return first;
    if (first[0] !== second[0]) return first;
    let best = first;
    for (let i = 0; i + 1 < heap.length; i++) {
      const prev = heap[i] as T;
      const next = heap[i + 1] as T;
      if (prev[0] !== next[0]) break;
      // Strict "less than" keeps the earliest entry on equal ids, as Python's stable `sorted(...)[0]` does.
      if (comparePythonStrings(prev[1], best[1]) < 0) best = prev;
    }
    return best;
  }
}

/**
 * The ordering tuple kombu's event `State` uses: `(clock, timestamp, id, obj)`. `clock` may be null/0 for events sent
 * "blind" (no clock).
 */
export type TimeTuple = readonly [clock: number | null | undefined, timestamp: number, id: string, ...rest: unknown[]];

/**
 * Orders two time tuples like kombu's `timetuple.__lt__`: by clock when both clocks are truthy (equal clocks ⇒ by
 * id), otherwise by timestamp. Returns a negative number, 0 or a positive number, for `Array.prototype.sort`.
 *
 * Python only defines `<`; 0 here means "neither is less than the other".
 */
export function compareTimetuples(a: TimeTuple, b: TimeTuple): number {
  const lessThan = (x: TimeTuple, y: TimeTuple): boolean => {
    const [cx, tx, ix] = x;
    const [cy, ty, iy] = y;
    if (cx && cy) return cx === cy ? comparePythonStrings(ix, iy) < 0 : cx < cy;
    return tx < ty;
  };
  if (lessThan(a, b)) return -1;
  if (lessThan(b, a)) return 1;
  return 0;
}

/**
 * Stamps arrive from other processes. Anything that is not a usable integer counts as 0: NaN or ±Infinity, and values
 * from 2**53 − 1 up, where `+ 1` stops changing the number and one bogus header would freeze the clock for good.
 */
function sanitize(n: unknown): number {
  if (typeof n !== 'number' || !Number.isFinite(n)) return 0;
  const floored = Math.floor(n);
  return floored < Number.MAX_SAFE_INTEGER ? floored : 0;
}
