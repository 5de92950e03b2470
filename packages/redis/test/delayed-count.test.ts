// countDelayed past its breakdown limit: the total only. What countDelayed counts (by queue, priority steps merged,
// a due message leaving it) is checked by defineDelayedCountSuite in capabilities.test.ts.
import { Queue, type OutgoingMessage } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { countDelayed } from '../src/delayed-count';
import { cleanup, makeTransport, rawClient, uniquePrefix } from './helpers/redis-test-env';

const message = (text: string): OutgoingMessage => ({
  body: Buffer.from(text),
  contentType: 'text/plain',
  contentEncoding: 'utf-8',
  headers: {},
  properties: { deliveryMode: 2 },
});

describe.skipIf(!(await brokerReachable('redis')))('countDelayed (Redis)', () => {
  const prefix = uniquePrefix('delayed-count');
  const redis = rawClient();
  // No promoter: the messages stay delayed however slow the test is.
  const transport = makeTransport(prefix, { promoteDelayed: false });
  afterAll(async () => {
    await transport.close();
    await cleanup(redis, prefix);
    redis.disconnect();
  });

  it('past the breakdown limit, only the total', async () => {
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue('dq.a'));
    for (const text of ['1', '2', '3']) await channel.publish('', 'dq.a', message(text), { delay: 60_000 });
    expect(await countDelayed(transport.redisStore.commands, transport.layout, 2)).toEqual({ total: 3 });
    expect(await countDelayed(transport.redisStore.commands, transport.layout, 3)).toEqual({ total: 3, byQueue: { 'dq.a': 3 } });
    await channel.close();
  });
});
