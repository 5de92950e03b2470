import { MessageStateError } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { expectError } from '../expect-error';
import { expectQueueHolds } from '../queue-contents';
import { bodyText, messageIds } from '../test-messages';

/** `get()` on an empty queue is null; otherwise it takes the head message, unsettled, with its delivery info. */
export async function checkGet(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  expect(await channel.get(queue), 'get() on an empty queue').toBeNull();
  await context.publishIds(channel, '', queue, messageIds('m', 2));
  await context.waitForDepth(queue, 2);
  const delivery = await channel.get(queue);
  expect(delivery && bodyText(delivery)).toBe('m-0');
  expect(delivery?.noAck).toBe(false);
  expect(delivery?.acknowledged).toBe(false);
  expect(delivery?.deliveryInfo).toMatchObject({ queue, exchange: '', routingKey: queue, redelivered: false });
  // The unsettled message is not ready any more; the other one is.
  await context.waitForDepth(queue, 1);
  await delivery?.ack();
  await expectQueueHolds(context, queue, ['m-1']);
}

/** `get({ noAck: true })` removes the message at once: nothing to settle, nothing restored on close. */
export async function checkGetNoAck(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  await context.publishIds(channel, '', queue, messageIds('m', 2));
  await context.waitForDepth(queue, 2);
  const delivery = await channel.get(queue, { noAck: true });
  expect(delivery && bodyText(delivery)).toBe('m-0');
  expect(delivery?.noAck).toBe(true);
  expect(delivery?.acknowledged).toBe(true);
  await expectError(() => (delivery ? delivery.ack() : Promise.resolve()), MessageStateError, 'ack() of a noAck delivery');
  await channel.close();
  await expectQueueHolds(context, queue, ['m-1']);
}

export const basicGetGroup: ConformanceGroup = {
  name: 'get',
  checks: [
    { name: 'get returns null on an empty queue and the head message otherwise', run: checkGet },
    { name: 'get with noAck forgets the message at once', run: checkGetNoAck },
  ],
};
