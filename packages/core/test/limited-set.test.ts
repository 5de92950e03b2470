import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { LimitedSet, type LimitedSetWire } from '../src/limited-set';
import { DecodeError } from '../src/errors';

/** A controllable clock, in seconds. */
function fakeClock(start = 1000): { now: () => number; advance: (s: number) => void; set: (s: number) => void } {
  let t = start;
  return { now: () => t, advance: (s) => (t += s), set: (s) => (t = s) };
}

const itemArb = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'id-1', 'id-2', '42', '7', '__proto__');

describe('LimitedSet', () => {
  it('adds, finds, discards and clears', () => {
    const set = new LimitedSet();
    set.add('x');
    set.add('y');
    expect(set.has('x')).toBe(true);
    expect(set.has('z')).toBe(false);
    expect(set.size).toBe(2);
    set.discard('x');
    set.discard('nope');
    expect(set.has('x')).toBe(false);
    expect(set.size).toBe(1);
    set.clear();
    expect(set.size).toBe(0);
    expect(set.pop()).toBeUndefined();
  });

  it('iterates in ascending insertion time; re-adding moves an item to the end', () => {
    const clock = fakeClock();
    const set = new LimitedSet({ clock: clock.now });
    for (const item of ['a', 'b', 'c']) {
      set.add(item);
      clock.advance(1);
    }
    set.add('a');
    expect([...set]).toEqual(['b', 'c', 'a']);
    expect(set.pop()).toBe('b');
    expect([...set]).toEqual(['c', 'a']);
  });

  it('orders by explicit timestamps, not by call order, and breaks ties by item', () => {
    const set = new LimitedSet();
    set.add('late', 30.5);
    set.add('early', 10.5);
    set.add('mid-b', 20.5);
    set.add('mid-a', 20.5);
    expect([...set]).toEqual(['early', 'mid-a', 'mid-b', 'late']);
  });

  it('purges down to maxlen when full, dropping the oldest', () => {
    const clock = fakeClock();
    const set = new LimitedSet({ maxlen: 3, clock: clock.now });
    for (const item of ['a', 'b', 'c', 'd', 'e']) {
      set.add(item);
      clock.advance(1);
    }
    expect(set.size).toBe(3);
    expect([...set]).toEqual(['c', 'd', 'e']);
  });

  it('expires lazily: on purge(), when full, and never below minlen', () => {
    const clock = fakeClock();
    const set = new LimitedSet({ expires: 10, minlen: 1, maxlen: 100, clock: clock.now });
    set.add('a');
    clock.advance(5);
    set.add('b');
    clock.advance(20);
    // Nothing purges by itself; membership does not look at timestamps.
    expect(set.has('a')).toBe(true);
    set.purge();
    expect([...set]).toEqual(['b']); // 'b' is expired too, but minlen keeps it
    set.add('c');
    set.purge(clock.now() + 100);
    expect([...set]).toEqual(['c']);
  });

  it('never holds more than maxlen and purges expired items (fake clock)', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), item: itemArb, dt: fc.double({ min: 0, max: 5, noNaN: true }) }),
      fc.record({ kind: fc.constant('discard' as const), item: itemArb }),
      fc.record({ kind: fc.constant('purge' as const), dt: fc.double({ min: 0, max: 20, noNaN: true }) }),
      fc.record({ kind: fc.constant('pop' as const) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 15 }), fc.array(op, { maxLength: 80 }), (maxlen, expires, ops) => {
        const clock = fakeClock(100);
        const set = new LimitedSet({ maxlen, expires, clock: clock.now });
        const model = new Map<string, number>();
        for (const o of ops) {
          if (o.kind === 'add') {
            clock.advance(o.dt);
            set.add(o.item);
            model.set(o.item, clock.now());
          } else if (o.kind === 'discard') {
            set.discard(o.item);
            model.delete(o.item);
          } else if (o.kind === 'pop') {
            const popped = set.pop();
            if (popped !== undefined) model.delete(popped);
          } else {
            clock.advance(o.dt);
            set.purge();
            for (const item of [...set]) expect((model.get(item) as number) + expires).toBeGreaterThan(clock.now());
          }
          expect(set.size).toBeLessThanOrEqual(maxlen);
          for (const item of set) expect(model.has(item)).toBe(true);
          const times = [...set].map((item) => model.get(item) as number);
          expect(times).toEqual([...times].sort((x, y) => x - y));
        }
      }),
    );
  });

  it('iteration order is ascending by timestamp for any adds', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(itemArb, fc.double({ min: 1, max: 1e6, noNaN: true })), { maxLength: 60 }), (adds) => {
        const set = new LimitedSet();
        const model = new Map<string, number>();
        for (const [item, t] of adds) {
          set.add(item, t);
          model.set(item, t);
        }
        const expected = [...model].sort((x, y) => x[1] - y[1] || (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0)).map(([i]) => i);
        expect([...set]).toEqual(expected);
        // pop() drains in the same order.
        const drained: string[] = [];
        for (let item = set.pop(); item !== undefined; item = set.pop()) drained.push(item);
        expect(drained).toEqual(expected);
      }),
    );
  });

  describe('wire form', () => {
    it('is {item: [timestamp, item]} and parses as Python expects', () => {
      const set = new LimitedSet();
      set.add('rev-bbb', 310.009937663);
      set.add('rev-aaa', 310.009943107);
      expect(set.toWire()).toEqual({ 'rev-bbb': [310.009937663, 'rev-bbb'], 'rev-aaa': [310.009943107, 'rev-aaa'] });
      expect(JSON.stringify(set)).toBe('{"rev-bbb":[310.009937663,"rev-bbb"],"rev-aaa":[310.009943107,"rev-aaa"]}');
      expect(new LimitedSet().toWire()).toEqual({});
    });

    it('never emits an integral timestamp (Python rejects int)', () => {
      fc.assert(
        fc.property(
          fc.array(fc.tuple(itemArb, fc.oneof(fc.integer({ min: 1, max: 2 ** 40 }), fc.double({ min: 1e-300, max: 1e15, noNaN: true }))), {
            maxLength: 30,
          }),
          (adds) => {
            const set = new LimitedSet();
            for (const [item, t] of adds) set.add(item, t);
            for (const [, [t]] of Object.entries(set.toWire())) {
              expect(JSON.stringify(t)).toMatch(/[.e]/);
            }
          },
        ),
      );
      const set = new LimitedSet();
      set.add('x', 12345);
      expect(JSON.stringify(set.toWire())).toBe('{"x":[12345.000001,"x"]}');
    });

    it('round-trips items and order through JSON', () => {
      fc.assert(
        fc.property(fc.array(fc.tuple(itemArb, fc.oneof(fc.integer({ min: 1, max: 1e6 }), fc.double({ min: 1, max: 1e6, noNaN: true }))), { maxLength: 40 }), (adds) => {
          const set = new LimitedSet();
          // Keep timestamps apart by more than the 1e-6 nudge of integral values.
          for (const [item, t] of adds) set.add(item, Math.round(t * 100) / 100);
          const wire = JSON.parse(JSON.stringify(set)) as LimitedSetWire;
          const copy = LimitedSet.fromWire(wire);
          expect([...copy]).toEqual([...set]);
          expect(copy.size).toBe(set.size);
        }),
      );
    });

    it('accepts the captured Python reply and {item: float}', () => {
      const captured = '{"rev-bbb": [310.009937663, "rev-bbb"], "rev-aaa": [310.009943107, "rev-aaa"], "rev-flt": [12345.5, "rev-flt"]}';
      const set = LimitedSet.fromWire(JSON.parse(captured) as LimitedSetWire);
      expect([...set]).toEqual(['rev-bbb', 'rev-aaa', 'rev-flt']);
      const plain = LimitedSet.fromWire({ a: 2.5, b: 1.5 });
      expect([...plain]).toEqual(['b', 'a']);
      // JSON cannot tell 12345 from 12345.0, so integral values are accepted here.
      expect([...LimitedSet.fromWire({ x: 12345, y: [12346, 'y'] })]).toEqual(['x', 'y']);
    });

    it('rejects invalid timestamps with a DecodeError, adding nothing', () => {
      const set = new LimitedSet();
      for (const bad of [{ ok: 1.5, x: 'soon' }, { x: ['12', 'x'] }, { x: null }, { x: [] }, { x: true }, { x: { t: 1.5 } }]) {
        expect(() => set.update(bad)).toThrow(DecodeError);
        expect(set.size).toBe(0);
      }
      expect(() => set.update({ x: 'soon' })).toThrow(/Expecting float timestamp, got type <class 'str'> with value: soon/);
    });

    it('keeps "__proto__" as an ordinary item', () => {
      const set = new LimitedSet();
      set.add('__proto__', 1.5);
      const wire = set.toWire();
      expect(Object.keys(wire)).toEqual(['__proto__']);
      expect(Object.getPrototypeOf(wire)).toBe(Object.prototype);
      const back = LimitedSet.fromWire(JSON.parse(JSON.stringify(wire)) as LimitedSetWire);
      expect(back.has('__proto__')).toBe(true);
    });
  });

  describe('update', () => {
    it('from another LimitedSet copies timestamps and purges', () => {
      const clock = fakeClock(100);
      const a = new LimitedSet({ maxlen: 3, clock: clock.now });
      const b = new LimitedSet({ clock: clock.now });
      a.add('x', 1.5);
      a.add('y', 5.5);
      b.add('z', 2.5);
      b.add('w', 3.5);
      b.add('x', 9.5);
      a.update(b);
      expect([...a]).toEqual(['w', 'y', 'x']);
      expect(a.toWire().x).toEqual([9.5, 'x']);
    });

    it('from an iterable adds each item with the current time', () => {
      const clock = fakeClock(50.25);
      const set = new LimitedSet({ clock: clock.now });
      set.update(['a', 'b']);
      expect(set.toWire()).toEqual({ a: [50.25, 'a'], b: [50.25, 'b'] });
      expect(() => set.update('abc' as unknown as string[])).toThrow(TypeError);
    });
  });

  it('validates options', () => {
    expect(() => new LimitedSet({ maxlen: -1 })).toThrow(RangeError);
    expect(() => new LimitedSet({ expires: -1 })).toThrow(RangeError);
    expect(() => new LimitedSet({ maxlen: 2, minlen: 3 })).toThrow(RangeError);
    expect(() => new LimitedSet({ maxlen: 0, minlen: 3, expires: 5 })).not.toThrow();
  });

  it('defaults to a monotonic clock in seconds', () => {
    const set = new LimitedSet();
    set.add('x');
    const [t] = set.toWire().x as [number, string];
    // CLOCK_MONOTONIC, like Python's time.monotonic(): seconds since boot, not since the epoch.
    expect(Math.abs(t - Number(process.hrtime.bigint()) / 1e9)).toBeLessThan(0.1);
    expect(t).toBeLessThan(Date.now() / 1000 / 2);
  });

  it("keeps exactly the newest 50 000 of 200 000 items at Celery's revoked-set size", () => {
    const set = new LimitedSet({ maxlen: 50_000, expires: 10_800 });
    for (let i = 0; i < 200_000; i++) set.add(`task-${i}`);
    expect(set.size).toBe(50_000);
    expect(set.has('task-199999')).toBe(true);
    expect(set.has('task-150000')).toBe(true);
    expect(set.has('task-149999')).toBe(false);
  });
});
