import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { LamportClock, compareTimetuples, type TimeTuple } from '../src/lamport-clock';

type Op = { kind: 'forward' } | { kind: 'adjust'; other: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.constant<Op>({ kind: 'forward' }),
  fc.integer({ min: -10, max: 10_000 }).map((other): Op => ({ kind: 'adjust', other })),
  fc.double().map((other): Op => ({ kind: 'adjust', other })),
);

/** kombu's sort_heap, transcribed as literally as possible (zip of h and h[1:], sorted(...)[0]). */
function kombuSortHeap<T extends readonly [number, string, ...unknown[]]>(h: readonly T[]): T {
  const [h0, h1] = [h[0] as T, h[1] as T];
  if (h0[0] === h1[0]) {
    const same: T[] = [];
    const pairs = h.slice(0, -1).map((p, i) => [p, h[i + 1] as T] as const);
    for (const [prev, next] of pairs) {
      if (prev[0] !== next[0]) break;
      same.push(prev);
    }
    // Stable sort by id (ids here are ASCII, where JS and Python string order agree).
    return [...same].sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))[0] as T;
  }
  return h0;
}

describe('LamportClock', () => {
  it('starts at 0 (or the initial value) and counts forward', () => {
    const clock = new LamportClock();
    expect(clock.value).toBe(0);
    expect(clock.forward()).toBe(1);
    expect(clock.forward()).toBe(2);
    expect(new LamportClock(41).forward()).toBe(42);
    expect(String(clock)).toBe('2');
    expect(JSON.stringify({ clock })).toBe('{"clock":2}');
  });

  it('adjust is max(own, other) + 1', () => {
    const clock = new LamportClock(5);
    expect(clock.adjust(3)).toBe(6);
    expect(clock.adjust(17)).toBe(18);
    expect(clock.value).toBe(18);
  });

  it('treats NaN, infinities and non-numbers as 0 and floors fractions', () => {
    const clock = new LamportClock(3);
    expect(clock.adjust(Number.NaN)).toBe(4);
    expect(clock.adjust(Number.POSITIVE_INFINITY)).toBe(5);
    expect(clock.adjust(Number.NEGATIVE_INFINITY)).toBe(6);
    expect(clock.adjust(-100)).toBe(7);
    expect(clock.adjust(null as unknown as number)).toBe(8);
    expect(clock.adjust('99' as unknown as number)).toBe(9);
    expect(clock.adjust(20.7)).toBe(21);
    expect(new LamportClock(Number.NaN).value).toBe(0);
    // Past 2**53 `+ 1` is a no-op; such a stamp would freeze the clock, so it is ignored.
    expect(clock.adjust(2 ** 60)).toBe(22);
    expect(clock.adjust(Number.MAX_VALUE)).toBe(23);
  });

  it('is monotonic under any sequence of forward/adjust', () => {
    fc.assert(
      fc.property(fc.nat({ max: 1000 }), fc.array(opArb, { maxLength: 200 }), (initial, ops) => {
        const clock = new LamportClock(initial);
        let previous = clock.value;
        for (const op of ops) {
          const returned = op.kind === 'forward' ? clock.forward() : clock.adjust(op.other);
          expect(returned).toBe(clock.value);
          expect(clock.value).toBeGreaterThan(previous);
          expect(Number.isInteger(clock.value)).toBe(true);
          previous = clock.value;
        }
      }),
    );
  });

  it('after adjust(x) the value exceeds x and the previous value', () => {
    fc.assert(
      fc.property(fc.nat({ max: 1e6 }), fc.oneof(fc.integer({ min: -1e6, max: 1e9 }), fc.double({ min: -1e6, max: 1e9, noNaN: true })), (initial, x) => {
        const clock = new LamportClock(initial);
        const before = clock.value;
        const after = clock.adjust(x);
        expect(after).toBeGreaterThan(x);
        expect(after).toBeGreaterThan(before);
        expect(after).toBe(Math.max(before, Math.floor(x)) + 1);
      }),
    );
  });

  it('stamps strictly increase along any send/receive chain between clocks', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 6 }).chain((n) =>
          fc.tuple(
            fc.array(fc.nat({ max: 50 }), { minLength: n, maxLength: n }),
            fc.array(fc.tuple(fc.nat({ max: n - 1 }), fc.nat({ max: n - 1 }), fc.nat({ max: 3 })), { maxLength: 100 }),
          ),
        ),
        ([initials, hops]) => {
          const clocks = initials.map((v) => new LamportClock(v));
          // A causal chain: each message is sent by whoever received the previous one.
          let holder = 0;
          let lastStamp = -Infinity;
          for (const [, to, localEvents] of hops) {
            const sender = clocks[holder] as LamportClock;
            for (let i = 0; i < localEvents; i++) sender.forward();
            const sent = sender.forward();
            expect(sent).toBeGreaterThan(lastStamp);
            const received = (clocks[to] as LamportClock).adjust(sent);
            expect(received).toBeGreaterThan(sent);
            lastStamp = received;
            holder = to;
          }
        },
      ),
    );
  });

  describe('sortHeap', () => {
    it('returns the first entry when the first two clocks differ', () => {
      expect(LamportClock.sortHeap([[1, 'b'], [2, 'a']])).toEqual([1, 'b']);
    });

    it('picks the smallest id among the equal run, never the last member of the run (kombu quirk)', () => {
      const heap = [
        [3, 'c.1', 'task', 'x'],
        [3, 'b.1', 'task', 'y'],
        [3, 'a.1', 'task', 'z'],
        [4, '0.1', 'task', 'w'],
      ] as const;
      // 'a.1' is the last of the run of clock 3, so kombu never collects it.
      expect(LamportClock.sortHeap(heap)).toBe(heap[1]);
    });

    it('keeps the earliest entry on equal ids (stable sort)', () => {
      const heap: (readonly [number, string, number])[] = [
        [1, 'a', 1],
        [1, 'a', 2],
        [1, 'a', 3],
      ];
      expect(LamportClock.sortHeap(heap)).toBe(heap[0]);
    });

    it('does not throw for 0 or 1 entries (Python raises IndexError there)', () => {
      expect(LamportClock.sortHeap([])).toBeUndefined();
      const only = [7, 'w1.42'] as const;
      expect(LamportClock.sortHeap([only])).toBe(only);
    });

    it('orders ids by code point like Python', () => {
      // U+FF61 sorts before U+1F600 in Python (code points), after it in UTF-16 code units.
      const heap = [
        [1, '\u{1F600}'],
        [1, '\uFF61'],
        [1, 'zz'],
      ] as const;
      expect(LamportClock.sortHeap(heap)).toBe(heap[1]);
    });

    it('equals kombu’s algorithm on sorted heaps with ties', () => {
      const entry = fc.tuple(fc.integer({ min: 0, max: 4 }), fc.constantFrom('a', 'b', 'c', 'w1.1', 'w2.7', 'w10.3'), fc.nat());
      fc.assert(
        fc.property(fc.array(entry, { minLength: 2, maxLength: 12 }), (entries) => {
          const heap = [...entries].sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : x[2] - y[2]));
          expect(LamportClock.sortHeap(heap)).toBe(kombuSortHeap(heap));
        }),
      );
    });
  });

  describe('compareTimetuples', () => {
    it('orders by clock when both are set, by id on equal clocks, else by timestamp', () => {
      const a: TimeTuple = [5, 100, 'b'];
      const b: TimeTuple = [6, 50, 'a'];
      expect(compareTimetuples(a, b)).toBeLessThan(0);
      expect(compareTimetuples([5, 1, 'a'], [5, 0, 'b'])).toBeLessThan(0);
      expect(compareTimetuples([5, 1, 'b'], [5, 0, 'a'])).toBeGreaterThan(0);
      expect(compareTimetuples([null, 1, 'b'], [5, 2, 'a'])).toBeLessThan(0);
      expect(compareTimetuples([0, 3, 'a'], [5, 2, 'b'])).toBeGreaterThan(0);
      expect(compareTimetuples([null, 2, 'a'], [undefined, 2, 'b'])).toBe(0);
    });

    it('sorts consistently with its own less-than', () => {
      const tt = fc.tuple(fc.option(fc.integer({ min: 1, max: 5 }), { nil: null }), fc.integer({ min: 0, max: 5 }), fc.constantFrom('a', 'b', 'c'));
      fc.assert(
        fc.property(tt, tt, (a, b) => {
          expect(Math.sign(compareTimetuples(a, b))).toBe(-Math.sign(compareTimetuples(b, a)) || 0);
        }),
      );
    });
  });
});
