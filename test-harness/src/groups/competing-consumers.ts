import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer, type DeliveryLog } from '../delivery-log';
import { duplicatesOf, messageIds } from '../test-messages';
import { quietPeriod } from '../wait-for';

/**
 * Three consumers (two channels of one connection, one of another) compete for one queue while messages are
 * published: every message reaches exactly one of them — none lost, none twice.
 */
export async function checkCompetingConsumers(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const total = 300;
  const ids = messageIds('m', total);
  const other = await context.openTransport();
  const logs: DeliveryLog[] = [];
  for (const channel of [await context.channel(), await context.channel(), await context.channel(other)]) {
    // Acks come back a tick later, so consumers hold deliveries while the others are being served.
    const { log } = await recordingConsumer(channel, [queue], {
      prefetch: 4,
      policy: (delivery, recorder) => void setImmediate(() => void recorder.settle(delivery, 'ack')),
    });
    logs.push(log);
  }
  await context.publishIds(await context.channel(), '', queue, ids);
  const received = (): string[] => logs.flatMap((log) => log.ids);
  await context.waitFor(() => received().length >= total, () => `${total} deliveries across 3 consumers; ${received().length} arrived`, 15_000);
  await context.waitFor(() => logs.every((log) => log.held.size === 0), 'the last acks');
  await quietPeriod(context.ms(150));
  for (const log of logs) log.assertNoSettleErrors();
  expect(duplicatesOf(received()), 'messages delivered to more than one consumer, or twice').toEqual([]);
  expect([...received()].sort()).toEqual([...ids].sort());
  expect(logs.flatMap((log) => log.deliveries).some((delivery) => delivery.deliveryInfo.redelivered), 'redelivered flags').toBe(false);
  await context.waitForDepth(queue, 0);
}

export const competingConsumersGroup: ConformanceGroup = {
  name: 'competing consumers',
  checks: [{ name: 'each message reaches exactly one of several live consumers', run: checkCompetingConsumers, timeoutMs: 45_000 }],
};
