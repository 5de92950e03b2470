import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { testMessage } from '../test-messages';
import { quietPeriod } from '../wait-for';

/** Clock and timer granularity: a delayed message may become visible this much before its nominal due time. */
const EARLY_TOLERANCE_MS = 15;

interface Arrival {
  id: string;
  elapsedMs: number;
  redelivered: boolean;
}

async function consumeWithArrivalTimes(context: ConformanceContext, queue: string, start: () => number): Promise<Arrival[]> {
  const arrivals: Arrival[] = [];
  await recordingConsumer(await context.channel(), [queue], {
    policy: (delivery, log) => {
      arrivals.push({ id: delivery.body.toString(), elapsedMs: Date.now() - start(), redelivered: delivery.deliveryInfo.redelivered });
      void log.settle(delivery, 'ack');
    },
  });
  return arrivals;
}

/** A message published with delay D is not visible before ~D, and is delivered after it. */
export async function checkDelayLowerBound(context: ConformanceContext): Promise<void> {
  const delay = context.ms(500);
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  const startedAt = Date.now();
  await channel.publish('', queue, testMessage('delayed'), { delay });
  await channel.publish('', queue, testMessage('immediate'));
  await context.waitForDepth(queue, 1);
  const early = await channel.get(queue);
  expect(early?.body.toString(), 'the only message visible right after publishing').toBe('immediate');
  await early?.ack();
  expect(await channel.get(queue), 'get() before the delay is over').toBeNull();
  const arrivals = await consumeWithArrivalTimes(context, queue, () => startedAt);
  await context.waitFor(() => arrivals.length >= 1, 'the delayed message', delay + 5_000);
  expect(arrivals[0]?.id).toBe('delayed');
  expect(arrivals[0]?.elapsedMs, `delivered after ${arrivals[0]?.elapsedMs} ms; the delay was ${delay} ms`).toBeGreaterThanOrEqual(
    delay - EARLY_TOLERANCE_MS,
  );
}

/** Messages with mixed delays are delivered in the order they fall due, none before its time. */
export async function checkMixedDelays(context: ConformanceContext): Promise<void> {
  const unit = Math.max(context.ms(250), context.setup.delayResolutionMs);
  const plan = [
    { id: 'third', delay: 3 * unit },
    { id: 'first', delay: unit },
    { id: 'second', delay: 2 * unit },
    { id: 'now', delay: 0 },
  ];
  const queue = await context.declareQueue('q');
  let startedAt = 0;
  const arrivals = await consumeWithArrivalTimes(context, queue, () => startedAt);
  const channel = await context.channel();
  startedAt = Date.now();
  for (const { id, delay } of plan) await channel.publish('', queue, testMessage(id), delay > 0 ? { delay } : {});
  await context.waitFor(() => arrivals.length >= plan.length, () => `${plan.length} delayed messages; ${arrivals.length} arrived`, 3 * unit + 5_000);
  expect(arrivals.map((arrival) => arrival.id)).toEqual(['now', 'first', 'second', 'third']);
  expect(arrivals.some((arrival) => arrival.redelivered), 'delayed messages marked redelivered').toBe(false);
  for (const arrival of arrivals) {
    const due = plan.find((entry) => entry.id === arrival.id)?.delay ?? 0;
    expect(arrival.elapsedMs, `${arrival.id} arrived after ${arrival.elapsedMs} ms; due after ${due} ms`).toBeGreaterThanOrEqual(
      due - EARLY_TOLERANCE_MS,
    );
  }
}

/**
 * With a consumer waiting, delayed messages arrive on time: each within `delayResolutionMs + delayToleranceMs`
 * after it fell due (the broker's delay step, then the store's step between looking for due messages), not merely
 * not before. A store that finds due messages only now and then delivers late; one that rounds due times up too.
 */
export async function checkDelayUpperBound(context: ConformanceContext): Promise<void> {
  const { delayResolutionMs, delayToleranceMs } = context.setup;
  const plan = [
    { id: 'short', delay: context.ms(300) },
    { id: 'long', delay: context.ms(600) },
  ];
  const queue = await context.declareQueue('q');
  // Arrival times on the clock itself: each is compared with the moment its own publish resolved, the latest the
  // broker can have taken it (a first delayed publish may set up the broker's delay machinery first).
  const arrivals = await consumeWithArrivalTimes(context, queue, () => 0);
  await quietPeriod(context.ms(100)); // the consumer is waiting
  const channel = await context.channel();
  const publishedAt = new Map<string, number>();
  for (const { id, delay } of plan) {
    await channel.publish('', queue, testMessage(id), { delay });
    publishedAt.set(id, Date.now());
  }
  const longest = Math.max(...plan.map((entry) => entry.delay));
  await context.waitFor(() => arrivals.length >= plan.length, () => `${plan.length} delayed messages; ${arrivals.length} arrived`, longest + delayResolutionMs + 5_000);
  for (const arrival of arrivals) {
    const due = plan.find((entry) => entry.id === arrival.id)?.delay ?? 0;
    const elapsed = arrival.elapsedMs - (publishedAt.get(arrival.id) ?? 0);
    const tolerance = delayResolutionMs + delayToleranceMs;
    expect(
      elapsed,
      `${arrival.id} arrived ${elapsed} ms after its publish resolved; due after ${due} ms, tolerance ${tolerance} ms (delayResolutionMs + delayToleranceMs)`,
    ).toBeLessThanOrEqual(due + tolerance);
  }
}

/** The broker holds a delayed message, not the publisher: it is delivered even after the publisher disconnected. */
export async function checkDelaySurvivesPublisher(context: ConformanceContext): Promise<void> {
  const delay = context.ms(300);
  const queue = await context.declareQueue('q');
  const publisher = await context.openTransport();
  await (await context.channel(publisher)).publish('', queue, testMessage('outlives-publisher'), { delay });
  await publisher.close();
  const { log } = await recordingConsumer(await context.channel(await context.openTransport()), [queue]);
  await log.waitForCount(context, 1, delay + 5_000);
  expect(log.ids).toEqual(['outlives-publisher']);
}

export const delayedDeliveryGroup: ConformanceGroup = {
  name: 'delayed delivery',
  skipReason: (setup) => (setup.capabilities.delayedDelivery ? undefined : 'transport reports delayedDelivery: false'),
  checks: [
    { name: 'a delayed message is not visible before its delay and is delivered after', run: checkDelayLowerBound },
    { name: 'mixed delays are delivered in due order', run: checkMixedDelays },
    { name: 'delayed messages reach a waiting consumer within the stated tolerance after they fall due', run: checkDelayUpperBound },
    { name: 'a delayed message is delivered after its publisher disconnected', run: checkDelaySurvivesPublisher },
  ],
};
