import { ChannelClosed, type Delivery } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { expectError } from '../expect-error';
import { bodyText, duplicatesOf, messageIds } from '../test-messages';
import { quietPeriod } from '../wait-for';

/**
 * Consumes everything left in `queue` on a fresh connection and checks that, together with what was acked
 * before, every id arrived exactly once — and that exactly the `held` ids came back marked redelivered.
 * Messages returned by a close go back to the head of the queue in their original order (AMQP and Kombu's
 * virtual transports agree on this), so the queue reads in publish order again.
 */
async function expectRedeliveredElsewhere(
  context: ConformanceContext,
  queue: string,
  ids: readonly string[],
  acked: readonly string[],
  held: readonly string[],
): Promise<void> {
  const { log } = await recordingConsumer(await context.channel(await context.openTransport()), [queue], { prefetch: 10 });
  const expected = ids.length - acked.length;
  await log.waitForCount(context, expected);
  await quietPeriod(context.ms(100));
  log.assertNoSettleErrors();
  expect(duplicatesOf([...acked, ...log.ids]), 'messages delivered twice').toEqual([]);
  expect([...acked, ...log.ids].sort(), 'every message, exactly once').toEqual([...ids].sort());
  expect(log.ids, 'order after the close: returned messages at the head, in their original order').toEqual(
    ids.filter((id) => !acked.includes(id)),
  );
  const redelivered = log.deliveries.filter((delivery) => delivery.deliveryInfo.redelivered).map(bodyText);
  expect(redelivered.sort(), 'messages marked redelivered').toEqual([...held].sort());
}

/** Closing a channel with unacked consumer deliveries returns them: another consumer gets them, redelivered. */
export async function checkChannelCloseRedelivers(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const ids = messageIds('m', 20);
  await context.publishIds(await context.channel(), '', queue, ids);
  await context.waitForDepth(queue, ids.length);
  const channel = await context.channel(await context.openTransport());
  const { log } = await recordingConsumer(channel, [queue], { prefetch: 5, policy: 'hold' });
  await log.waitForCount(context, 5);
  const held = log.ids;
  expect(log.deliveries.some((delivery) => delivery.stale), 'stale deliveries before the close').toBe(false);
  await channel.close();
  // A worker asks this before starting work it reserved: the message is on its way to another consumer.
  expect(log.deliveries.every((delivery) => delivery.stale), 'every unsettled delivery of a closed channel is stale').toBe(true);
  const stale = log.deliveries[0] as Delivery;
  await expectError(() => stale.ack(), ChannelClosed, 'ack() of a delivery whose channel was closed');
  await expectRedeliveredElsewhere(context, queue, ids, [], held);
}

/** Deliveries taken with `get` and left unsettled come back when their channel closes. */
export async function checkChannelCloseRestoresGets(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const ids = messageIds('m', 6);
  await context.publishIds(await context.channel(), '', queue, ids);
  await context.waitForDepth(queue, ids.length);
  const channel = await context.channel(await context.openTransport());
  const acked: string[] = [];
  const held: string[] = [];
  for (let i = 0; i < 3; i++) {
    const delivery = await channel.get(queue);
    if (!delivery) throw new Error('get() returned null although messages were ready');
    if (i === 1) {
      await delivery.ack();
      acked.push(bodyText(delivery));
    } else {
      held.push(bodyText(delivery));
    }
  }
  await channel.close();
  await expectRedeliveredElsewhere(context, queue, ids, acked, held);
}

/** Closing the whole transport returns what its consumers held. */
export async function checkTransportCloseRedelivers(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const ids = messageIds('m', 12);
  await context.publishIds(await context.channel(), '', queue, ids);
  await context.waitForDepth(queue, ids.length);
  const transport = await context.openTransport();
  const { log } = await recordingConsumer(await context.channel(transport), [queue], { prefetch: 4, policy: 'hold' });
  await log.waitForCount(context, 4);
  await quietPeriod(context.ms(50));
  const held = log.ids;
  await transport.close();
  await expectRedeliveredElsewhere(context, queue, ids, [], held);
}

/**
 * A consumer cancelled mid-stream gets nothing after `cancel()` resolved; what it held can still be settled, and
 * everything else stays in the queue for the next consumer.
 */
export async function checkCancelMidStream(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const ids = messageIds('m', 40);
  const publisher = await context.channel();
  await context.publishIds(publisher, '', queue, ids);
  await context.waitForDepth(queue, ids.length);
  const { log, consumer } = await recordingConsumer(await context.channel(), [queue], {
    prefetch: 4,
    // Ack the first ten as they come, then hold: the consumer stops with a full prefetch window.
    policy: (delivery, recorder) => {
      if (recorder.count <= 10) void recorder.settle(delivery, 'ack');
    },
  });
  await log.waitForCount(context, 14);
  await consumer.cancel();
  const receivedAtCancel = log.count;
  // What it held is still ours to settle after cancel.
  const held = [...log.held];
  await log.settleHeld('ack');
  log.assertNoSettleErrors();
  const late = messageIds('late', 5);
  await context.publishIds(publisher, '', queue, late);
  await context.waitForDepth(queue, ids.length - receivedAtCancel + late.length);
  await quietPeriod(context.ms(150));
  expect(log.count, 'deliveries after cancel() resolved').toBe(receivedAtCancel);
  expect(held.every((delivery) => delivery.state === 'acked')).toBe(true);
  const { log: next } = await recordingConsumer(await context.channel(), [queue], { prefetch: 10 });
  await next.waitForCount(context, ids.length - receivedAtCancel + late.length);
  await quietPeriod(context.ms(100));
  const everything = [...log.ids, ...next.ids];
  expect(duplicatesOf(everything), 'messages delivered twice').toEqual([]);
  expect(everything.sort()).toEqual([...ids, ...late].sort());
}

export const deliveryGuaranteesGroup: ConformanceGroup = {
  name: 'at-least-once delivery',
  checks: [
    { name: 'closing a channel redelivers its unacked deliveries to another consumer', run: checkChannelCloseRedelivers },
    { name: 'closing a channel restores unsettled get() deliveries', run: checkChannelCloseRestoresGets },
    { name: 'closing a transport redelivers what its consumers held', run: checkTransportCloseRedelivers },
    { name: 'a consumer cancelled mid-stream stops receiving and loses nothing', run: checkCancelMidStream },
  ],
};
