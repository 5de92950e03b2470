import { VirtualTransport, type Transport } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { bodyText, duplicatesOf, messageIds, testMessage } from '../test-messages';
import { quietPeriod, waitFor } from '../wait-for';

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
 * A requeued message goes where `capabilities.requeuePosition` says: publish a, b, c, take a and requeue it; the
 * queue then serves a, b, c (`head`, AMQP) or b, c, a (`tail`, Kombu's virtual transports). A transport that does
 * not declare it fails: consumers of a transport depend on which it is.
 */
export async function checkRequeuePosition(context: ConformanceContext): Promise<void> {
  const position = context.capabilities.requeuePosition;
  if (position !== 'head' && position !== 'tail') {
    throw new Error(
      "The transport does not declare capabilities.requeuePosition ('head' or 'tail'), so where requeue() puts a " +
        'message is unchecked. Declare where it goes (AMQP: head; Kombu\'s virtual transports: tail).',
    );
  }
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  await context.publishIds(channel, '', queue, ['a', 'b', 'c']);
  await context.waitForDepth(queue, 3);
  const first = await channel.get(queue);
  expect(first && bodyText(first)).toBe('a');
  await first?.requeue();
  await context.waitForDepth(queue, 3);
  const order = (await context.drain(channel, queue)).map(bodyText);
  expect(order, `order after requeueing a, declared requeuePosition: ${position}`).toEqual(position === 'head' ? ['a', 'b', 'c'] : ['b', 'c', 'a']);
}

/** How long a cancel of a waiting consumer may take (before `timeoutScale`): well below the long poll it waits in. */
const CANCEL_BOUND_MS = 1000;
/** The long poll the cancel check waits in: a claim that sits its wait out instead of honouring the cancel is seen. */
const LONG_POLL_MS = 5000;

/**
 * The transport the cancel check consumes on: one whose waiting claims block far longer than the cancel may take
 * (`createWithPollInterval`). A polling transport with a short poll would hide a claim that ignores the cancel, so
 * one without the hook fails here, saying what to give.
 */
async function longPollingTransport(context: ConformanceContext, bound: number): Promise<Transport> {
  const poll = Math.max(LONG_POLL_MS, bound * 5);
  const { createWithPollInterval } = context.setup;
  const transport = await context.openTransport(createWithPollInterval ? () => createWithPollInterval(poll) : context.setup.create);
  if (transport instanceof VirtualTransport && transport.pollIntervalMs < poll) {
    throw new Error(
      `The cancel check needs a consumer waiting in a long poll (${poll} ms) and got one polling every ` +
        `${transport.pollIntervalMs} ms${createWithPollInterval ? ' from createWithPollInterval' : ''}: a claim that ignores ` +
        `the cancel would still stop within ${bound} ms. Give defineTransportSuite a createWithPollInterval(ms) that ` +
        `makes a transport on the same broker with that pollIntervalMs.`,
    );
  }
  return transport;
}

/**
 * A consumer cancelled while it waits on an empty queue in a long poll (5 s) stops within 1 s — its waiting claim
 * honours the cancel instead of waiting out the poll (a worker's shutdown would wait that long) — and takes nothing
 * more: the messages published next go to the consumer that follows, in order, none marked redelivered.
 */
export async function checkCancelledConsumerTakesNothing(context: ConformanceContext): Promise<void> {
  const bound = context.ms(CANCEL_BOUND_MS);
  const queue = await context.declareQueue('q');
  const waiting = await longPollingTransport(context, bound);
  const { log: first, consumer } = await recordingConsumer(await context.channel(waiting), [queue], { prefetch: 10 });
  await quietPeriod(context.ms(100)); // waiting on the empty queue
  let cancelDone = false;
  const cancelled = consumer.cancel().then(() => {
    cancelDone = true;
  });
  await waitFor(() => cancelDone, bound, `the cancel of a consumer waiting on an empty queue to finish without waiting out its poll`);
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

/**
 * A consumer without acks that is cancelled mid-batch gives back what it took and never handed out: a virtual store
 * forgets a no-ack claim at once, so the rest of the batch has to be put back, not restored as if still held.
 * Everything reaches one of the two consumers exactly once, and nothing the first never received is marked
 * redelivered. The messages are published at once to a consumer already waiting, so its claims come in batches, and
 * it cancels from inside its handler. AMQP is exempt: there the broker forgets a no-ack message when it sends it,
 * and one sent after the cancel is lost by design (at-most-once).
 */
export async function checkNoAckCancelMidBatchGivesBack(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const ids = messageIds('m', 200);
  const received: string[] = [];
  let cancelling: Promise<void> | undefined;
  const handle: { cancel?: () => Promise<void> } = {};
  const consumer = await (await context.channel()).consume({
    queues: [queue],
    noAck: true,
    onMessage: (delivery) => {
      received.push(bodyText(delivery));
      if (received.length >= 15 && handle.cancel) cancelling ??= handle.cancel();
    },
  });
  handle.cancel = () => consumer.cancel();
  const publisher = await context.channel();
  await Promise.all(ids.map((id) => publisher.publish('', queue, testMessage(id))));
  await context.waitFor(() => received.length >= 15, () => `15 deliveries; ${received.length} arrived`);
  await cancelling;
  expect(received.length, 'the first consumer was cancelled before it received everything').toBeLessThan(ids.length);
  await quietPeriod(context.ms(200));
  const { log: next } = await recordingConsumer(await context.channel(), [queue], { prefetch: 50 });
  await next.waitForCount(context, ids.length - received.length);
  await quietPeriod(context.ms(100));
  const everything = [...received, ...next.ids];
  expect(duplicatesOf(everything), 'messages delivered twice').toEqual([]);
  expect(everything.sort()).toEqual([...ids].sort());
  const wronglyMarked = next.deliveries.filter((delivery) => delivery.deliveryInfo.redelivered).map(bodyText);
  expect(wronglyMarked, 'messages the cancelled consumer never received, marked redelivered').toEqual([]);
}

export const orderingGroup: ConformanceGroup = {
  name: 'ordering',
  checks: [
    { name: 'FIFO per queue through get', run: checkFifoByGet },
    { name: 'FIFO per queue through consume, each message once', run: checkFifoByConsume },
    { name: 'untouched messages stay FIFO around a requeue', run: checkFifoAfterRequeue },
    { name: 'a requeued message goes to the head or the tail, as capabilities.requeuePosition declares', run: checkRequeuePosition },
    { name: 'a consumer cancelled while waiting takes nothing; the next one gets every message, in order', run: checkCancelledConsumerTakesNothing },
    { name: 'a consumer cancelled mid-stream gives back what it read ahead unmarked', run: checkCancelMidStreamKeepsMessagesFresh },
    {
      name: 'a no-ack consumer cancelled mid-batch gives back what it never handed out',
      run: checkNoAckCancelMidBatchGivesBack,
      skipReason: (setup) => (setup.capabilities.redeliveredFlag ? 'AMQP: the broker forgets a no-ack message once it sends it (at-most-once)' : undefined),
    },
  ],
};
