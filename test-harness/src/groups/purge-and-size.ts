import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { expectQueueHolds } from '../queue-contents';
import { bodyText, messageIds } from '../test-messages';

/** `checkQueue` counts ready messages only, agrees with the probe, and `purgeQueue` removes exactly those. */
export async function checkPurgeAndSize(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  expect(await channel.purgeQueue(queue), 'purging an empty queue').toBe(0);
  await context.publishIds(channel, '', queue, messageIds('m', 7));
  await context.waitForDepth(queue, 7);
  expect((await channel.checkQueue(queue)).messageCount, 'checkQueue after 7 publishes').toBe(7);
  const held = [await channel.get(queue), await channel.get(queue)];
  await context.waitForDepth(queue, 5);
  expect((await channel.checkQueue(queue)).messageCount, 'checkQueue with 2 delivered, unsettled').toBe(5);
  const unacked = context.setup.probe?.unackedCount;
  if (unacked) await context.waitFor(async () => (await unacked(queue)) === 2, `2 unacked messages in ${queue}`);
  expect(await channel.purgeQueue(queue), 'messages purgeQueue reports').toBe(5);
  await context.waitForDepth(queue, 0);
  // Deliveries held during the purge survive it: requeue one, ack the other.
  const [first, second] = held;
  expect(first && second && [bodyText(first), bodyText(second)]).toEqual(['m-0', 'm-1']);
  await first?.requeue();
  await second?.ack();
  await expectQueueHolds(context, queue, ['m-0']);
}

export const purgeAndSizeGroup: ConformanceGroup = {
  name: 'purge and size',
  checks: [{ name: 'checkQueue counts ready messages and purge removes exactly those', run: checkPurgeAndSize }],
};
