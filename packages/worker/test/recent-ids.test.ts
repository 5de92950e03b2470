import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RecentIds } from '../src/runtime/recent-ids';
import { WorkerState } from '../src/runtime/worker-state';

function clocked(): { ids: (maxlen: number, expires: number) => RecentIds; advance: (ms: number) => void } {
  let now = 1000;
  return {
    ids: (maxlen, expires) => new RecentIds({ maxlen, expires, clock: () => now }),
    advance: (ms) => {
      now += ms;
    },
  };
}

describe('RecentIds (the ids of tasks that succeeded here lately)', () => {
  it('keeps the newest maxlen ids, dropping the oldest first', () => {
    const { ids } = clocked();
    const recent = ids(3, 3600);
    for (const id of ['a', 'b', 'c', 'd']) recent.add(id);
    expect(recent.size).toBe(3);
    expect(['a', 'b', 'c', 'd'].map((id) => recent.has(id))).toEqual([false, true, true, true]);
  });

  it('moves an id added again to the newest place, so it outlives those added after its first add', () => {
    const { ids } = clocked();
    const recent = ids(2, 3600);
    recent.add('a');
    recent.add('b');
    recent.add('a');
    recent.add('c');
    expect(['a', 'b', 'c'].map((id) => recent.has(id))).toEqual([true, false, true]);
  });

  it('forgets ids older than expires as new ones come', () => {
    const { ids, advance } = clocked();
    const recent = ids(100, 10);
    recent.add('old');
    advance(5_000);
    recent.add('mid');
    advance(6_000);
    recent.add('new');
    expect(['old', 'mid', 'new'].map((id) => recent.has(id))).toEqual([false, true, true]);
    expect(recent.size).toBe(2);
  });

  it('answers as a plain list of adds would, over long runs of adds, re-adds and clock steps', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 5 }),
        // Past 1,024 adds the queue lets go of its dropped front: runs that long are among those tried.
        fc.array(fc.tuple(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 700 })), { maxLength: 2500, size: 'max' }),
        (maxlen, expires, steps) => {
          const { ids, advance } = clocked();
          const recent = ids(maxlen, expires);
          let now = 1000;
          // The model: ids in the order of their latest add, each with its time.
          let model: Array<[string, number]> = [];
          for (const [n, ms] of steps) {
            const id = `t${n}`;
            advance(ms);
            now += ms;
            recent.add(id);
            model = model.filter(([kept]) => kept !== id);
            model.push([id, now]);
            while (model.length > maxlen || (model[0] as [string, number])[1] <= now - expires * 1000) model.shift();
            expect(recent.size).toBe(model.length);
          }
          for (let n = 0; n <= 60; n++) expect(recent.has(`t${n}`)).toBe(model.some(([kept]) => kept === `t${n}`));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('is what a worker marks its succeeded runs in: 10,000 ids kept for an hour', () => {
    const state = new WorkerState();
    expect(state.succeeded).toBeInstanceOf(RecentIds);
    for (let n = 0; n < 10_001; n++) state.succeeded.add(`t${n}`);
    expect(state.succeeded.size).toBe(10_000);
    expect(state.succeeded.has('t0')).toBe(false);
    expect(state.succeeded.has('t10000')).toBe(true);
  });
});
