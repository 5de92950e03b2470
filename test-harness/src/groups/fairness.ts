import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { messageIds } from '../test-messages';

/**
 * The windows of a consumer's delivery sequence that break fairness: starting at any delivery where all `k` queues
 * still hold messages, the next `k` deliveries must include every one of them.
 */
export function unfairWindows(sequence: readonly string[], queues: readonly string[], perQueue: number): string[] {
  const k = queues.length;
  const remaining = new Map(queues.map((queue) => [queue, perQueue]));
  const problems: string[] = [];
  for (let start = 0; start + k <= sequence.length; start++) {
    if ([...remaining.values()].every((count) => count > 0)) {
      const window = new Set(sequence.slice(start, start + k));
      const missing = queues.filter((queue) => !window.has(queue));
      if (missing.length > 0) problems.push(`deliveries ${start}..${start + k - 1} never served ${missing.join(', ')}`);
    }
    const served = sequence[start] as string;
    remaining.set(served, (remaining.get(served) ?? 0) - 1);
  }
  return problems;
}

async function expectFairConsumption(context: ConformanceContext, prefetch: number): Promise<void> {
  const k = 4;
  const perQueue = 12;
  const queues: string[] = [];
  const channel = await context.channel();
  for (let index = 0; index < k; index++) {
    const queue = await context.declareQueue(`q${index}`);
    queues.push(queue);
    await context.publishIds(channel, '', queue, messageIds(`q${index}`, perQueue));
  }
  for (const queue of queues) await context.waitForDepth(queue, perQueue);
  const { log } = await recordingConsumer(await context.channel(), queues, { prefetch });
  await log.waitForCount(context, k * perQueue);
  log.assertNoSettleErrors();
  const sequence = log.deliveries.map((delivery) => delivery.deliveryInfo.queue);
  expect(unfairWindows(sequence, queues, perQueue), `queue sequence: ${sequence.map((queue) => queues.indexOf(queue)).join(' ')}`).toEqual([]);
  // Each queue's own messages still come in order.
  for (const [index, queue] of queues.entries()) {
    expect(log.deliveries.filter((delivery) => delivery.deliveryInfo.queue === queue).map((delivery) => delivery.body.toString())).toEqual(
      messageIds(`q${index}`, perQueue),
    );
  }
}

/** A consumer of k non-empty queues is served from each of them within any k consecutive deliveries. */
export function checkFairness(context: ConformanceContext): Promise<void> {
  return expectFairConsumption(context, 1);
}

/** The same with a prefetch window wider than k: one batch of deliveries is spread over the queues too. */
export function checkFairnessWidePrefetch(context: ConformanceContext): Promise<void> {
  return expectFairConsumption(context, 8);
}

export const fairnessGroup: ConformanceGroup = {
  name: 'fairness',
  checks: [
    { name: 'a consumer of k non-empty queues is served from each within k deliveries (prefetch 1)', run: checkFairness },
    { name: 'the same with a prefetch window wider than k', run: checkFairnessWidePrefetch },
  ],
};
