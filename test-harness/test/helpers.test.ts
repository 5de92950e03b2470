import { describe, expect, it } from 'vitest';
import { ConditionTimeout, QueueModel, duplicatesOf, seededRandom, shuffled, unfairWindows, waitFor } from '@kq/test-harness';

describe('suite helpers', () => {
  it('waitFor resolves once the predicate holds and times out with the last state it saw', async () => {
    let polls = 0;
    await waitFor(() => ++polls >= 3, 1_000, 'three polls');
    expect(polls).toBe(3);
    let seen = 0;
    const failure = waitFor(() => (seen++, false), 60, () => `never; polled ${seen} times`);
    await expect(failure).rejects.toBeInstanceOf(ConditionTimeout);
    await expect(failure).rejects.toThrow(/Timed out after 60 ms waiting for never; polled \d+ times/);
  });

  it('unfairWindows accepts round robin and reports a starved queue', () => {
    const queues = ['a', 'b', 'c'];
    expect(unfairWindows(['a', 'b', 'c', 'a', 'b', 'c'], queues, 2)).toEqual([]);
    // a waits five deliveries while it still holds a message.
    expect(unfairWindows(['a', 'b', 'c', 'b', 'c', 'a'], queues, 2)).toEqual(['deliveries 1..3 never served a', 'deliveries 2..4 never served a']);
    // Windows from delivery 2 on are not judged: a is empty by then.
    expect(unfairWindows(['a', 'a', 'b', 'c', 'b', 'c'], queues, 2)).toEqual(['deliveries 0..2 never served c']);
  });

  it('QueueModel serves priorities in order, fresh messages FIFO, returned ones in any order and marked redelivered', () => {
    const model = new QueueModel(1, 'lower-first');
    model.publish(0, 'p6-a', 6);
    model.publish(0, 'p0-a', 0);
    model.publish(0, 'p0-b', 0);
    expect([...model.allowedNext(0)]).toEqual([['p0-a', false]]);
    const first = model.take(0, 'p0-a');
    model.hold(first);
    expect([...model.allowedNext(0)]).toEqual([['p0-b', false]]);
    model.closeChannel();
    expect([...model.allowedNext(0)]).toEqual([
      ['p0-b', false],
      ['p0-a', true],
    ]);
    expect(model.depth(0)).toBe(3);
    expect(model.purge(0)).toBe(3);
    expect(model.allowedNext(0).size).toBe(0);
    const higher = new QueueModel(1, 'higher-first');
    higher.publish(0, 'low', 0);
    higher.publish(0, 'high', 9);
    expect([...higher.allowedNext(0).keys()]).toEqual(['high']);
  });

  it('seeded randomness is repeatable', () => {
    expect(shuffled([1, 2, 3, 4, 5, 6], seededRandom(7))).toEqual(shuffled([1, 2, 3, 4, 5, 6], seededRandom(7)));
    expect(duplicatesOf(['a', 'b', 'a', 'c', 'b'])).toEqual(['a', 'b']);
  });
});
