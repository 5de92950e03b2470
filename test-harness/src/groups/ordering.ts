import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { bodyText, messageIds } from '../test-messages';
import { quietPeriod } from '../wait-for';

/** Messages come out of a queue in the order they went in (get). */
export async function checkFifoByGet(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  const ids = messageIds('m', 100);
  await context.publishIds(channel, '', queue, ids);
  await context.waitForDepth(queue, ids.length);
  const taken = await context.drain(channel, queue);
  expect(taken.map(bodyText)).toEqual(ids);
  expect(taken.every((delivery) => !delivery.deliveryInfo.redelivered), 'no first delivery is marked redelivered').toBe(true);
}

/** Messages come out of a queue in the order they went in (consume with prefetch), each exactly once. */
export async function checkFifoByConsume(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const ids = messageIds('m', 100);
  await context.publishIds(await context.channel(), '', queue, ids);
  await context.waitForDepth(queue, ids.length);
  const { log } = await recordingConsumer(await context.channel(), [queue], { prefetch: 10 });
  await log.waitForCount(context, ids.length);
  await quietPeriod(context.ms(100));
  log.assertNoSettleErrors();
  expect(log.ids).toEqual(ids);
  await context.waitForDepth(queue, 0);
}

/**
 * After a requeue, the messages nobody touched still come in publish order; the requeued one comes once more,
 * marked redelivered, at the head (AMQP) or the tail (Kombu's virtual transports) — either is accepted.
 */
export async function checkFifoAfterRequeue(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  const ids = messageIds('m', 10);
  await context.publishIds(channel, '', queue, ids);
  await context.waitForDepth(queue, ids.length);
  const first = await channel.get(queue);
  const second = await channel.get(queue);
  expect([first && bodyText(first), second && bodyText(second)]).toEqual(['m-0', 'm-1']);
  await second?.requeue();
  await first?.ack();
  await context.waitForDepth(queue, ids.length - 1);
  const rest = await context.drain(channel, queue);
  const untouched = rest.filter((delivery) => bodyText(delivery) !== 'm-1');
  const requeued = rest.filter((delivery) => bodyText(delivery) === 'm-1');
  expect(untouched.map(bodyText)).toEqual(ids.slice(2));
  expect(untouched.some((delivery) => delivery.deliveryInfo.redelivered), 'untouched messages marked redelivered').toBe(false);
  expect(requeued.length, 'deliveries of the requeued message').toBe(1);
  expect(requeued[0]?.deliveryInfo.redelivered).toBe(true);
}

export const orderingGroup: ConformanceGroup = {
  name: 'ordering',
  checks: [
    { name: 'FIFO per queue through get', run: checkFifoByGet },
    { name: 'FIFO per queue through consume, each message once', run: checkFifoByConsume },
    { name: 'untouched messages stay FIFO around a requeue', run: checkFifoAfterRequeue },
  ],
};
