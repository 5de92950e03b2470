import { Exchange, MessageStateError, type Delivery } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { expectError } from '../expect-error';
import { expectQueueHolds } from '../queue-contents';
import { bodyText, messageIds, testMessage } from '../test-messages';

async function getOne(context: ConformanceContext, queue: string, channel?: Awaited<ReturnType<ConformanceContext['channel']>>): Promise<Delivery> {
  const delivery = await (channel ?? (await context.admin())).get(queue);
  if (!delivery) throw new Error(`get() on ${queue} returned null although a message should be ready`);
  return delivery;
}

/** Acked messages are gone for good: not in the queue, not restored when the channel closes. */
export async function checkAckRemoves(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  await context.publishIds(channel, '', queue, messageIds('m', 3));
  await context.waitForDepth(queue, 3);
  for (let i = 0; i < 3; i++) await (await getOne(context, queue, channel)).ack();
  expect(await channel.get(queue), 'get() after acking everything').toBeNull();
  await channel.close();
  const unacked = context.setup.probe?.unackedCount;
  if (unacked) await context.waitFor(async () => (await unacked(queue)) === 0, `no unacked messages left in ${queue}`);
  await expectQueueHolds(context, queue, []);
}

/** `requeue()` puts the message back; it is delivered again with `redelivered` set (through get and consume). */
export async function checkRequeueRedelivers(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  await channel.publish('', queue, testMessage('again'));
  await context.waitForDepth(queue, 1);
  const first = await getOne(context, queue, channel);
  expect(first.deliveryInfo.redelivered, 'first delivery').toBe(false);
  await first.requeue();
  expect(first.state).toBe('requeued');
  await context.waitForDepth(queue, 1);
  const second = await getOne(context, queue, channel);
  expect(bodyText(second)).toBe('again');
  expect(second.deliveryInfo.redelivered, 'delivery after requeue()').toBe(true);
  await second.ack();

  // Through a consumer: requeue the first arrival, ack the second.
  const { log } = await recordingConsumer(await context.channel(), [queue], {
    prefetch: 1,
    policy: (delivery, recorder) => void recorder.settle(delivery, recorder.count === 1 ? 'requeue' : 'ack'),
  });
  await channel.publish('', queue, testMessage('consumed-again'));
  await log.waitForCount(context, 2);
  log.assertNoSettleErrors();
  expect(log.ids).toEqual(['consumed-again', 'consumed-again']);
  expect(log.deliveries.map((delivery) => delivery.deliveryInfo.redelivered)).toEqual([false, true]);
  await context.waitForDepth(queue, 0);
}

/** `reject()` on a queue without a dead-letter exchange drops the message: it never comes back. */
export async function checkRejectDrops(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  await channel.publish('', queue, testMessage('refused'));
  await context.waitForDepth(queue, 1);
  const delivery = await getOne(context, queue, channel);
  await delivery.reject();
  expect(delivery.state).toBe('rejected');
  await channel.close();
  await expectQueueHolds(context, queue, []);
}

interface DeathRecord {
  reason?: unknown;
  queue?: unknown;
}

/** `reject()` on a queue with a dead-letter exchange republishes there, with the dead-letter key or the original. */
export async function checkRejectDeadLetters(context: ConformanceContext): Promise<void> {
  const dlx = await context.declareExchange('dlx', { type: 'direct' });
  const x = new Exchange(dlx, { type: 'direct' });
  const dead = await context.declareQueue('dead', { exchange: x, routingKey: 'dead' });
  const withKey = await context.declareQueue('with-key', { deadLetterExchange: dlx, deadLetterRoutingKey: 'dead' });
  // Without a dead-letter routing key the message keeps its own: the source queue's name (default exchange).
  const withoutKey = await context.declareQueue('without-key', { deadLetterExchange: dlx });
  const originalKey = await context.declareQueue('original-key', { exchange: x, routingKey: withoutKey });
  const channel = await context.channel();
  await channel.publish('', withKey, testMessage('dead-1', { headers: { keep: 'me' } }));
  await channel.publish('', withoutKey, testMessage('dead-2'));
  await context.waitForDepth(withKey, 1);
  await context.waitForDepth(withoutKey, 1);
  await (await getOne(context, withKey, channel)).reject();
  await (await getOne(context, withoutKey, channel)).reject();
  await context.waitForDepth(dead, 1);
  const deadLettered = await getOne(context, dead, channel);
  expect(bodyText(deadLettered)).toBe('dead-1');
  expect(deadLettered.headers['keep']).toBe('me');
  const deaths = deadLettered.headers['x-death'];
  expect(Array.isArray(deaths), 'x-death header on a dead-lettered message').toBe(true);
  expect((deaths as DeathRecord[])[0]).toMatchObject({ reason: 'rejected', queue: withKey });
  await deadLettered.ack();
  await expectQueueHolds(context, originalKey, ['dead-2']);
  await expectQueueHolds(context, withKey, []);
  await expectQueueHolds(context, withoutKey, []);
}

/** A second settle of the same delivery is `MessageStateError`, and does not disturb the queue. */
export async function checkDoubleSettle(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  const pairs: ReadonlyArray<readonly ['ack' | 'requeue' | 'reject', 'ack' | 'requeue' | 'reject']> = [
    ['ack', 'ack'],
    ['ack', 'requeue'],
    ['requeue', 'ack'],
    ['requeue', 'requeue'],
    ['reject', 'requeue'],
    ['reject', 'ack'],
  ];
  let expectedDepth = 0;
  for (const [first, second] of pairs) {
    await channel.publish('', queue, testMessage(`${first}-then-${second}`));
    expectedDepth++;
    await context.waitForDepth(queue, expectedDepth);
    // With requeues in play the head may be an older, requeued message: settle whatever comes.
    const delivery = await getOne(context, queue, channel);
    await delivery[first]();
    if (first !== 'requeue') expectedDepth--;
    await expectError(() => delivery[second](), MessageStateError, `${second}() after ${first}()`);
    expect(delivery.state).toBe(first === 'ack' ? 'acked' : first === 'reject' ? 'rejected' : 'requeued');
    await context.waitForDepth(queue, expectedDepth);
  }
  const left = await context.drain(channel, queue);
  expect(left.length, 'messages left after the double settles').toBe(expectedDepth);
}

export const acknowledgementGroup: ConformanceGroup = {
  name: 'acknowledgement',
  checks: [
    { name: 'ack removes the message for good', run: checkAckRemoves },
    { name: 'requeue redelivers with redelivered set', run: checkRequeueRedelivers },
    { name: 'reject without a dead-letter exchange drops the message', run: checkRejectDrops },
    {
      name: 'reject dead-letters to the dead-letter exchange with x-death',
      run: checkRejectDeadLetters,
      skipReason: (setup) => (setup.capabilities.deadLettering ? undefined : 'transport reports deadLettering: false'),
    },
    { name: 'a second settle is MessageStateError and changes nothing', run: checkDoubleSettle },
  ],
};
