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

/**
 * A consumer cancelled while it waits on an empty queue stops at once — its waiting claim honours the cancel instead
 * of waiting out the store's poll (a worker's shutdown would wait that long) — and takes nothing more: the messages
 * published next go to the consumer that follows, in order, none marked redelivered.
 */
export async function checkCancelledConsumerTakesNothing(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const { log: first, consumer } = await recordingConsumer(await context.channel(), [queue], { prefetch: 10 });
  await quietPeriod(context.ms(100)); // waiting on the empty queue
  let cancelDone = false;
  const cancelled = consumer.cancel().then(() => {
    cancelDone = true;
  });
  await context.waitFor(() => cancelDone, 'the cancel of a consumer waiting on an empty queue to finish without waiting out a poll', 1000);
  await cancelled;
  const { log } = await recordingConsumer(await context.channel(), [queue], { prefetch: 10 });
  const ids = messageIds('m', 10);
  await context.publishIds(await context.channel(), '', queue, ids);
  await log.waitForCount(context, ids.length);
  await quietPeriod(context.ms(100));
  expect(first.ids, 'the cancelled consumer received messages').toEqual([]);
  expect(log.ids).toEqual(ids);
  expect(log.deliveries.some((delivery) => delivery.deliveryInfo.redelivered), 'a message never delivered before is marked redelivered').toBe(false);
}

/**
 * A consumer cancelled mid-stream may have taken messages it never handed out (read ahead): they go back as they
 * were — the next consumer gets each message once, and only messages the first one received may say redelivered.
 */
export async function checkCancelMidStreamKeepsMessagesFresh(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const ids = messageIds('m', 200);
  await context.publishIds(await context.channel(), '', queue, ids);
  await context.waitForDepth(queue, ids.length);
  let cancelling: Promise<void> | undefined;
  const handle: { cancel?: () => Promise<void> } = {};
  const { log: first, consumer } = await recordingConsumer(await context.channel(), [queue], {
    prefetch: 10,
    policy: (delivery, log) => {
      void log.settle(delivery, 'ack');
      if (log.count >= 15 && handle.cancel) cancelling ??= handle.cancel();
    },
  });
  handle.cancel = () => consumer.cancel();
  await first.waitForCount(context, 15);
  cancelling ??= consumer.cancel(); // 15 arrived before consume() returned
  await cancelling;
  expect(first.count, 'the first consumer was cancelled before it received everything').toBeLessThan(ids.length);
  await quietPeriod(context.ms(200));
  const seen = new Set(first.ids);
  const { log: next } = await recordingConsumer(await context.channel(), [queue], { prefetch: 50 });
  await next.waitForCount(context, ids.length - seen.size);
  await quietPeriod(context.ms(100));
  expect([...first.ids, ...next.ids].sort()).toEqual([...ids].sort());
  const wronglyMarked = next.deliveries.filter((delivery) => delivery.deliveryInfo.redelivered && !seen.has(bodyText(delivery))).map(bodyText);
  expect(wronglyMarked, 'messages the cancelled consumer never received, marked redelivered').toEqual([]);
}

export const orderingGroup: ConformanceGroup = {
  name: 'ordering',
  checks: [
    { name: 'FIFO per queue through get', run: checkFifoByGet },
    { name: 'FIFO per queue through consume, each message once', run: checkFifoByConsume },
    { name: 'untouched messages stay FIFO around a requeue', run: checkFifoAfterRequeue },
    { name: 'a consumer cancelled while waiting takes nothing; the next one gets every message, in order', run: checkCancelledConsumerTakesNothing },
    { name: 'a consumer cancelled mid-stream gives back what it read ahead unmarked', run: checkCancelMidStreamKeepsMessagesFresh },
  ],
};
