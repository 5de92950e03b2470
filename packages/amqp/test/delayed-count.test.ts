// countDelayed on RabbitMQ: the messages waiting in the delay ladder, summed over its levels.
import { Queue, QueueNotFound, type Channel } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DelayLadder } from '../src/delay-ladder';
import { countLadder } from '../src/delayed-count';
import type { AmqpTransport } from '../src/index';
import { message, namer, newTransport, waitFor } from './helpers';

const up = await brokerReachable('amqp');
const name = namer('delaycount');

describe.skipIf(!up)('AmqpChannel.countDelayed', () => {
  let transport: AmqpTransport;
  let channel: Channel;
  const target = name('q');

  beforeAll(async () => {
    // A ladder of its own (Kombu's prefix): the default one is every client's in the vhost, so its count is theirs too.
    transport = newTransport({ connectionName: name('conn'), delayLadderPrefix: name('ladder') });
    channel = await transport.createChannel();
  });
  afterAll(async () => {
    await channel.deleteQueue(target).catch(() => undefined);
    await transport.deleteDelayLadder();
    await transport.close();
  });

  it('is 0 before the ladder exists, then counts delayed messages at whatever level they wait (no split by queue)', async () => {
    expect(await channel.countDelayed?.()).toEqual({ total: 0 });
    await channel.declareQueue(new Queue(target, { durable: false }));
    // 60 s, 3 s (levels 1 then 0) and 1 h: each waits in one level queue at a time.
    for (const delay of [60_000, 3_000, 3_600_000]) await channel.publish('', target, message(`m${delay}`), { delay });
    await waitFor('3 in the ladder', async () => (await channel.countDelayed?.())?.total === 3, 5000);
    expect(await channel.countDelayed?.()).toEqual({ total: 3 });
    expect((await channel.checkQueue(target)).messageCount).toBe(0);
    // the 3 s message leaves the ladder for its queue
    await waitFor('the 3 s message out', async () => (await channel.countDelayed?.())?.total === 2, 10_000);
    // Dead-lettering is asynchronous: the message leaves its level queue a moment before it is in the target queue.
    await waitFor('the 3 s message in its queue', async () => (await channel.checkQueue(target)).messageCount === 1, 5000);
    expect((await channel.checkQueue(target)).messageCount).toBe(1);
  }, 20_000);
});

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
