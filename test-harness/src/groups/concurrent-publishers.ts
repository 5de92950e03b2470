import type { Channel } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { duplicatesOf, messageIds } from '../test-messages';
import { quietPeriod } from '../wait-for';

/**
 * Four publishers (two connections × two channels) publish at the same time: every message lands once, and each
 * publisher's messages keep their order.
 */
export async function checkConcurrentPublishers(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const perPublisher = 75;
  const second = await context.openTransport();
  const publishers: Channel[] = [
    await context.channel(),
    await context.channel(),
    await context.channel(second),
    await context.channel(second),
  ];
  const batches = publishers.map((_, index) => messageIds(`p${index}`, perPublisher));
  await Promise.all(publishers.map((channel, index) => context.publishIds(channel, '', queue, batches[index] as string[])));
  const total = perPublisher * publishers.length;
  await context.waitForDepth(queue, total);
  const { log } = await recordingConsumer(await context.channel(), [queue], { prefetch: 20 });
  await log.waitForCount(context, total, 15_000);
  await quietPeriod(context.ms(100));
  log.assertNoSettleErrors();
  expect(duplicatesOf(log.ids), 'messages delivered twice').toEqual([]);
  expect(log.count).toBe(total);
  for (const [index, batch] of batches.entries()) {
    expect(log.ids.filter((id) => id.startsWith(`p${index}-`)), `publisher ${index}'s messages, in order`).toEqual(batch);
  }
}

export const concurrentPublishersGroup: ConformanceGroup = {
  name: 'concurrent publishers',
  checks: [{ name: 'concurrent publishers: every message once, per-publisher order kept', run: checkConcurrentPublishers, timeoutMs: 45_000 }],
};
