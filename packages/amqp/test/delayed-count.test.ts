// countLadder: the messages waiting in RabbitMQ's delay ladder, summed over its levels, without declaring any. What
// countDelayed reports is checked by defineDelayedCountSuite in capabilities.test.ts.
import { QueueNotFound } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { DelayLadder } from '../src/delay-ladder';
import { countLadder } from '../src/delayed-count';

describe('countLadder', () => {
  it('asks no further once the top level is missing (no ladder), and skips a missing lower level', async () => {
    const ladder = new DelayLadder('x');
    const asked: string[] = [];
    expect(await countLadder(ladder, async (queue) => (asked.push(queue), Promise.reject(new QueueNotFound(queue))))).toEqual({ total: 0 });
    expect(asked).toEqual(['x_celery_delayed_27']);
    const counted = await countLadder(ladder, async (queue) => (queue === 'x_celery_delayed_3' ? Promise.reject(new QueueNotFound(queue)) : 1));
    expect(counted).toEqual({ total: 27 });
  });
});
