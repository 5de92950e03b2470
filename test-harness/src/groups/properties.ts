import { Exchange, type MessageProperties } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { testMessage } from '../test-messages';
import { pick } from './round-trip';

function fullProperties(context: ConformanceContext): MessageProperties {
  return {
    correlationId: 'corr-ü-7f3a',
    replyTo: context.name('replies'),
    priority: context.capabilities.priorities ? context.maxPriorityLevel : 0,
    deliveryMode: 2,
    expiration: '600000',
    messageId: 'msg-0b4e-ß',
    timestamp: 1_700_000_123,
    type: 'kq.conformance.properties',
    appId: 'kq-conformance',
  };
}

const HEADERS = {
  text: 'plain',
  integer: 42,
  negative: -7,
  large: 2 ** 40,
  float: 3.25,
  yes: true,
  no: false,
  nothing: null,
  list: [1, 'two', true, null, { deep: [3, 4] }],
  emptyList: [],
  nested: { level1: { level2: { level3: 'deep', count: 3 } }, siblings: ['a', 'b'] },
  emptyObject: {},
} as const;

/** Every property the suite sets arrives as it was published, through `get` and `consume`. */
export async function checkPropertiesPreserved(context: ConformanceContext): Promise<void> {
  const properties = fullProperties(context);
  const queue = await context.priorityQueue('q');
  const channel = await context.channel();
  await channel.publish('', queue, testMessage('by-get', { properties }));
  await context.waitForDepth(queue, 1);
  const viaGet = await channel.get(queue);
  expect(viaGet, 'get() after publishing').not.toBeNull();
  expect(pick({ ...viaGet?.properties }, Object.keys(properties))).toEqual(properties);
  await viaGet?.ack();

  const { log } = await recordingConsumer(await context.channel(), [queue]);
  await channel.publish('', queue, testMessage('by-consume', { properties }));
  await log.waitForCount(context, 1);
  expect(pick({ ...log.deliveries[0]?.properties }, Object.keys(properties))).toEqual(properties);
}

/** Header values of every JSON type — nested objects, arrays, numbers, booleans, null — arrive unchanged. */
export async function checkHeadersPreserved(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  await channel.publish('', queue, testMessage('headers', { headers: { ...HEADERS } }));
  await context.waitForDepth(queue, 1);
  const delivery = await channel.get(queue);
  expect(delivery, 'get() after publishing').not.toBeNull();
  expect(pick(delivery?.headers ?? {}, Object.keys(HEADERS))).toEqual(HEADERS);
  await delivery?.ack();
}

/** Deliveries report the exchange and routing key they were published with, and the queue they came from. */
export async function checkDeliveryInfo(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('x', { type: 'direct' });
  const queue = await context.declareQueue('q', { exchange: new Exchange(exchange, { type: 'direct' }), routingKey: 'info.key' });
  const { log } = await recordingConsumer(await context.channel(), [queue], { policy: 'hold' });
  await (await context.channel()).publish(exchange, 'info.key', testMessage('info'));
  await log.waitForCount(context, 1);
  const delivery = log.deliveries[0];
  expect(delivery?.deliveryInfo).toMatchObject({ exchange, routingKey: 'info.key', queue, redelivered: false });
  expect(typeof delivery?.deliveryInfo.deliveryTag).toBe('string');
  expect(delivery?.deliveryInfo.deliveryTag.length).toBeGreaterThan(0);
  expect(delivery?.state).toBe('received');
  expect(delivery?.acknowledged).toBe(false);
  await log.settleHeld('ack');
  log.assertNoSettleErrors();
  expect(delivery?.state).toBe('acked');
}

export const propertiesGroup: ConformanceGroup = {
  name: 'properties and headers',
  checks: [
    {
      name: 'correlationId, replyTo, priority, deliveryMode, expiration, messageId, timestamp, type and appId are preserved',
      run: checkPropertiesPreserved,
    },
    { name: 'headers with nested objects, arrays, numbers, booleans and null are preserved', run: checkHeadersPreserved },
    { name: 'deliveries report exchange, routing key, queue and a delivery tag', run: checkDeliveryInfo },
  ],
};
