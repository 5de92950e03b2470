import { describe, expect, it } from 'vitest';
import { planFrom, SLACK, UNMEASURED, watchedLists } from '../src/claim-plan';

const layout = { steps: [0, 3], listKey: (queue: string, step: number) => (step === 0 ? queue : `${queue}\x06\x16${step}`) };
const oneStep = { ...layout, steps: [0] };

describe('a native claim round’s plan', () => {
  it('watches every list of the queues once, the most urgent step first', () => {
    expect(watchedLists(layout, ['a', 'b', 'a']).map((list) => list.key)).toEqual(['a', 'b', 'a\x06\x163', 'b\x06\x163']);
  });

  it('takes from the most urgent step with messages, sharing the room over its queues within what each holds plus the slack', () => {
    const watched = watchedLists(layout, ['a', 'b']);
    // step 0 empty, step 3: a holds 2, b holds 100
    const plan = planFrom(watched, [0, 0, 2, 100], 64, false);
    expect(plan.map(({ key, count }) => [key, count])).toEqual([
      ['a\x06\x163', 2 + SLACK],
      ['b\x06\x163', 32],
    ]);
  });

  it('asks a list never measured for its share, and nothing of lists known empty unless the round is a first look', () => {
    const watched = watchedLists(oneStep, ['a', 'b']);
    expect(planFrom(watched, [UNMEASURED, 0], 10, false).map(({ key, count }) => [key, count])).toEqual([['a', 10]]);
    expect(planFrom(watched, [0, 0], 10, false)).toEqual([]);
    // A first look asks the most urgent lists anyway: messages may have come since they were measured.
    expect(planFrom(watched, [0, 0], 10, true).map(({ key, count }) => [key, count])).toEqual([
      ['a', 5],
      ['b', 5],
    ]);
    expect(planFrom(watched, [5, 5], 0, true)).toEqual([]);
  });
});
