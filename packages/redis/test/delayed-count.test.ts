// countDelayed: ETA/countdown messages the delayed set holds, in total and by queue (priority steps merged).
import { Queue, type OutgoingMessage } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { countDelayed } from '../src/delayed-count';
import { cleanup, makeTransport, rawClient, uniquePrefix } from './helpers/redis-test-env';

const message = (text: string, priority?: number): OutgoingMessage => ({
  body: Buffer.from(text),
  contentType: 'text/plain',
  contentEncoding: 'utf-8',
  headers: {},
  properties: { deliveryMode: 2, ...(priority === undefined ? {} : { priority }) },
});

describe.skipIf(!(await brokerReachable('redis')))('RedisChannel.countDelayed', () => {
  const prefix = uniquePrefix('delayed-count');
  const redis = rawClient();
  // No promoter: the messages stay delayed however slow the test is.
  const transport = makeTransport(prefix, { promoteDelayed: false });
  afterAll(async () => {
    await transport.close();
    await cleanup(redis, prefix);
    redis.disconnect();
  });

  it('counts the delayed set by target queue, a queue of several priority steps (and a non-ASCII name) as one', async () => {
    const channel = await transport.createChannel();
    expect(await channel.countDelayed?.()).toEqual({ total: 0, byQueue: {} });
    await channel.declareQueue(new Queue('dq.a', { maxPriority: 9 }));
    await channel.declareQueue(new Queue('dq.é'));
    await channel.publish('', 'dq.a', message('1'), { delay: 60_000 });
    await channel.publish('', 'dq.a', message('2', 9), { delay: 60_000 });
    await channel.publish('', 'dq.é', message('3'), { delay: 60_000 });
    expect(await redis.zcard(`${prefix}_kq.delayed`)).toBe(3);
    expect(await channel.countDelayed?.()).toEqual({ total: 3, byQueue: { 'dq.a': 2, 'dq.é': 1 } });
    await channel.close();
    await expect(channel.countDelayed?.()).rejects.toThrow(/closed/);
  });

  it('past the breakdown limit, only the total', async () => {
    expect(await countDelayed(transport.redisStore.commands, transport.layout, 2)).toEqual({ total: 3 });
  });
});
