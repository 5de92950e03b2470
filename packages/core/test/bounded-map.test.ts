import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../src/index';

type Step = { op: 'set'; key: number; value: number } | { op: 'delete'; key: number } | { op: 'refresh'; key: number } | { op: 'clear' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ op: fc.constant('set' as const), key: fc.integer({ min: 0, max: 40 }), value: fc.integer() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), key: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('refresh' as const), key: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('clear' as const) }) },
);

describe('BoundedMap (a Map that drops its oldest entries past a limit)', () => {
  it('keeps the newest `limit` keys, the oldest dropped first, and stays a Map', () => {
    const map = new BoundedMap<string, number>(3);
    for (const [n, key] of ['a', 'b', 'c', 'd'].entries()) map.set(key, n);
    expect([...map.keys()]).toEqual(['b', 'c', 'd']);
    map.set('b', 9); // set again while present: keeps its place
    map.set('e', 4);
    expect([...map.entries()]).toEqual([
      ['c', 2],
      ['d', 3],
      ['e', 4],
    ]);
    expect(map).toBeInstanceOf(Map);
  });

  it('answers as a plain list of keys would, through sets, deletes, refreshes (delete, then set) and clears', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 12 }), fc.array(step, { maxLength: 3000, size: 'max' }), (limit, steps) => {
        const map = new BoundedMap<number, number>(limit);
        let model: Array<[number, number]> = [];
        const put = (key: number, value: number): void => {
          const at = model.findIndex(([k]) => k === key);
          if (at >= 0) model[at] = [key, value];
          else model.push([key, value]);
          while (model.length > limit) model.shift();
        };
        for (const s of steps) {
          if (s.op === 'set') {
            map.set(s.key, s.value);
            put(s.key, s.value);
          } else if (s.op === 'delete') {
            expect(map.delete(s.key)).toBe(model.some(([k]) => k === s.key));
            model = model.filter(([k]) => k !== s.key);
          } else if (s.op === 'refresh') {
            map.delete(s.key);
            map.set(s.key, -1);
            model = model.filter(([k]) => k !== s.key);
            put(s.key, -1);
          } else {
            map.clear();
            model = [];
          }
          expect(map.size).toBe(model.length);
        }
        expect([...map.entries()]).toEqual(model);
      }),
      { numRuns: 80 },
    );
  });
});
