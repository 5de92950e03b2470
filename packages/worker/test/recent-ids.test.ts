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

  it('is what a worker marks its succeeded runs in: 10,000 ids kept for an hour', () => {
    const state = new WorkerState();
    expect(state.succeeded).toBeInstanceOf(RecentIds);
    for (let n = 0; n < 10_001; n++) state.succeeded.add(`t${n}`);
    expect(state.succeeded.size).toBe(10_000);
    expect(state.succeeded.has('t0')).toBe(false);
    expect(state.succeeded.has('t10000')).toBe(true);
  });
});
