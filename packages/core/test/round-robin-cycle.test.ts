import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { RoundRobinCycle } from '../src/round-robin-cycle';

describe('RoundRobinCycle', () => {
  it('starts empty or with the given items', () => {
    expect(new RoundRobinCycle().size).toBe(0);
    expect(new RoundRobinCycle(new Set(['a', 'b'])).items).toEqual(['a', 'b']);
  });

  it('consume(n) returns the first n items without rotating', () => {
    const cycle = new RoundRobinCycle(['qa', 'qb', 'qc']);
    expect(cycle.consume(2)).toEqual(['qa', 'qb']);
    expect(cycle.consume(10)).toEqual(['qa', 'qb', 'qc']);
    expect(cycle.consume(0)).toEqual([]);
    expect(cycle.consume(-1)).toEqual([]);
    expect(cycle.items).toEqual(['qa', 'qb', 'qc']);
  });

  it('rotate moves the used item to the back (captured `qa qb` then `qb qa`)', () => {
    const cycle = new RoundRobinCycle(['qa', 'qb', 'qc']);
    cycle.rotate('qa');
    expect(cycle.items).toEqual(['qb', 'qc', 'qa']);
    cycle.rotate('qc');
    expect(cycle.items).toEqual(['qb', 'qa', 'qc']);
    cycle.rotate('qc');
    expect(cycle.items).toEqual(['qb', 'qa', 'qc']);
  });

  it('ignores rotate of an unknown item and moves only the first occurrence', () => {
    const cycle = new RoundRobinCycle(['a', 'b', 'a', 'c']);
    cycle.rotate('zzz');
    expect(cycle.items).toEqual(['a', 'b', 'a', 'c']);
    cycle.rotate('a');
    expect(cycle.items).toEqual(['b', 'a', 'c', 'a']);
  });

  it('update replaces the items; items is a snapshot', () => {
    const cycle = new RoundRobinCycle(['a', 'b']);
    const snapshot = cycle.items;
    cycle.rotate('a');
    expect(snapshot).toEqual(['a', 'b']);
    cycle.update(['x', 'y', 'z']);
    expect(cycle.items).toEqual(['x', 'y', 'z']);
    expect(cycle.size).toBe(3);
  });

  it('is fair: with k queues every non-empty queue is served within k pulls', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }).chain((k) =>
          fc.tuple(
            fc.constant(k),
            fc.array(fc.nat({ max: 20 }), { minLength: k, maxLength: k }),
            fc.array(fc.nat({ max: k - 1 }), { maxLength: 60 }),
          ),
        ),
        ([k, initialDepths, refills]) => {
          const names = Array.from({ length: k }, (_, i) => `q${i}`);
          const depth = new Map(names.map((n, i) => [n, initialDepths[i] as number]));
          const cycle = new RoundRobinCycle(names);
          // Pulls since each queue was last served while it had messages waiting.
          const waiting = new Map(names.map((n) => [n, 0]));
          let pull = 0;
          for (;;) {
            const served = cycle.consume(k).find((q) => (depth.get(q) as number) > 0);
            if (served === undefined) break;
            depth.set(served, (depth.get(served) as number) - 1);
            cycle.rotate(served);
            for (const q of names) {
              if (q === served) waiting.set(q, 0);
              else if ((depth.get(q) as number) > 0) waiting.set(q, (waiting.get(q) as number) + 1);
              // A non-empty queue that was passed over k times in a row would be starving.
              expect(waiting.get(q) as number).toBeLessThan(k);
            }
            // Producers keep some queues busy while we consume.
            const refill = refills[pull++];
            if (refill !== undefined) depth.set(`q${refill}`, (depth.get(`q${refill}`) as number) + 1);
          }
        },
      ),
    );
  });
});
