import { Binding, Exchange, Queue, type ExchangeType } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { expectQueueHolds } from '../queue-contents';
import type { SuiteSetup } from '../suite-options';
import { messageIds, testMessage } from '../test-messages';
import { quietPeriod } from '../wait-for';

/** The default exchange `''` routes to the queue its routing key names, and deliveries say so. */
export async function checkDefaultExchange(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  await channel.publish('', queue, testMessage('direct-to-queue'));
  await context.waitForDepth(queue, 1);
  const delivery = await channel.get(queue);
  expect(delivery?.body.toString()).toBe('direct-to-queue');
  expect(delivery?.deliveryInfo).toMatchObject({ exchange: '', routingKey: queue, queue, redelivered: false });
  await delivery?.ack();
}

/** Direct exchanges route on exact key equality, one copy per bound queue. */
export async function checkDirectRouting(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('direct', { type: 'direct' });
  const x = new Exchange(exchange, { type: 'direct' });
  const a1 = await context.declareQueue('a1', { exchange: x, routingKey: 'a' });
  const a2 = await context.declareQueue('a2', { exchange: x, routingKey: 'a' });
  const b = await context.declareQueue('b', { exchange: x, routingKey: 'b', bindings: [new Binding(x, 'a.b')] });
  const channel = await context.channel();
  for (const key of ['a', 'b', 'a.b', 'A', 'a ', 'c', '']) await channel.publish(exchange, key, testMessage(`key:${key}`));
  await expectQueueHolds(context, a1, ['key:a']);
  await expectQueueHolds(context, a2, ['key:a']);
  await expectQueueHolds(context, b, ['key:b', 'key:a.b']);
}

/** `*` is exactly one word, `#` zero or more; each queue matches at most once per message. */
const TOPIC_KEYS = ['a', 'a.b', 'a.c', 'a.b.c', 'a.b.b.c', 'b.a', 'c', 'x.b.y'] as const;
const TOPIC_CASES: ReadonlyArray<{ pattern: string; matches: readonly string[] }> = [
  { pattern: 'a.b.c', matches: ['a.b.c'] },
  { pattern: 'a.*.c', matches: ['a.b.c'] },
  { pattern: '*', matches: ['a', 'c'] },
  { pattern: '*.b.*', matches: ['a.b.c', 'x.b.y'] },
  { pattern: 'a.#', matches: ['a', 'a.b', 'a.c', 'a.b.c', 'a.b.b.c'] },
  { pattern: '#.c', matches: ['a.c', 'a.b.c', 'a.b.b.c', 'c'] },
  { pattern: 'a.*.#', matches: ['a.b', 'a.c', 'a.b.c', 'a.b.b.c'] },
  { pattern: '#.b.#', matches: ['a.b', 'a.b.c', 'a.b.b.c', 'b.a', 'x.b.y'] },
  { pattern: '#', matches: [...TOPIC_KEYS] },
];

export async function checkTopicRouting(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('topic', { type: 'topic' });
  const x = new Exchange(exchange, { type: 'topic' });
  const queues: string[] = [];
  for (const [index, { pattern }] of TOPIC_CASES.entries()) {
    queues.push(await context.declareQueue(`t${index}`, { exchange: x, routingKey: pattern }));
  }
  // One queue bound by two overlapping patterns still gets one copy.
  const overlap = await context.declareQueue('overlap', { exchange: x, routingKey: 'a.#', bindings: [new Binding(x, '#.c')] });
  const channel = await context.channel();
  for (const key of TOPIC_KEYS) await channel.publish(exchange, key, testMessage(key));
  for (const [index, { pattern, matches }] of TOPIC_CASES.entries()) {
    await expectQueueHolds(context, queues[index] as string, matches).catch((error: unknown) => {
      throw new Error(`topic pattern ${JSON.stringify(pattern)}: ${error instanceof Error ? error.message : String(error)}`);
    });
  }
  await expectQueueHolds(context, overlap, ['a', 'a.b', 'a.c', 'a.b.c', 'a.b.b.c', 'c']);
}

/** Queued fanout: every bound queue stores a copy, whatever the routing key. */
export async function checkQueuedFanout(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('fanout', { type: 'fanout' });
  const x = new Exchange(exchange, { type: 'fanout' });
  const first = await context.declareQueue('f1', { exchange: x, routingKey: 'ignored' });
  const second = await context.declareQueue('f2', { exchange: x });
  const channel = await context.channel();
  await channel.publish(exchange, 'any.key', testMessage('one'));
  await channel.publish(exchange, '', testMessage('two'));
  await expectQueueHolds(context, first, ['one', 'two'], { ordered: true });
  await expectQueueHolds(context, second, ['one', 'two'], { ordered: true });
}

/** Live fanout: every bound queue with a consumer at publish time receives a copy; nothing is stored. */
export async function checkLiveFanout(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('fanout', { type: 'fanout' });
  const x = new Exchange(exchange, { type: 'fanout' });
  const first = await context.declareQueue('f1', { exchange: x });
  const second = await context.declareQueue('f2', { exchange: x });
  const idle = await context.declareQueue('idle', { exchange: x });
  const one = await recordingConsumer(await context.channel(), [first]);
  const two = await recordingConsumer(await context.channel(await context.openTransport()), [second]);
  const ids = messageIds('broadcast', 3);
  await context.publishIds(await context.channel(), exchange, 'any.key', ids);
  await one.log.waitForCount(context, 3);
  await two.log.waitForCount(context, 3);
  await quietPeriod(context.ms(100));
  expect(one.log.ids).toEqual(ids);
  expect(two.log.ids).toEqual(ids);
  expect(await context.depth(idle), 'copies stored for a live-fanout queue without a consumer').toBe(0);
}

/** Headers exchanges match `x-match: all` (the default) and `any` over the binding arguments. */
export async function checkHeadersRouting(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('headers', { type: 'headers' });
  const x = new Exchange(exchange, { type: 'headers' });
  const all = await context.declareQueue('all', { bindings: [new Binding(x, '', { 'x-match': 'all', format: 'pdf', type: 'report' })] });
  const any = await context.declareQueue('any', { bindings: [new Binding(x, '', { 'x-match': 'any', format: 'pdf', type: 'log' })] });
  const implicit = await context.declareQueue('implicit', { bindings: [new Binding(x, '', { format: 'zip' })] });
  const channel = await context.channel();
  const send = (id: string, headers: Record<string, unknown>): Promise<void> =>
    channel.publish(exchange, 'ignored', testMessage(id, { headers }));
  await send('pdf-report', { format: 'pdf', type: 'report' });
  await send('pdf', { format: 'pdf' });
  await send('log', { type: 'log', extra: 1 });
  await send('zip-report', { format: 'zip', type: 'report' });
  await send('none', {});
  await send('other-values', { format: 'doc', type: 'memo' });
  await expectQueueHolds(context, all, ['pdf-report']);
  await expectQueueHolds(context, any, ['pdf-report', 'pdf', 'log']);
  await expectQueueHolds(context, implicit, ['zip-report']);
}

/**
 * One queue bound twice to one headers exchange, with different arguments, is two bindings: a message matching
 * either arrives, and one matching both arrives once. (A store that keys bindings by queue and routing key keeps
 * only one of them.)
 */
export async function checkHeadersTwoBindingsOneQueue(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('headers', { type: 'headers' });
  const x = new Exchange(exchange, { type: 'headers' });
  const queue = await context.declareQueue('twice', {
    bindings: [new Binding(x, '', { 'x-match': 'all', format: 'pdf' }), new Binding(x, '', { 'x-match': 'all', type: 'log' })],
  });
  const channel = await context.channel();
  const send = (id: string, headers: Record<string, unknown>): Promise<void> => channel.publish(exchange, '', testMessage(id, { headers }));
  await send('pdf', { format: 'pdf' });
  await send('log', { type: 'log' });
  await send('both', { format: 'pdf', type: 'log' });
  await send('neither', { format: 'zip' });
  await expectQueueHolds(context, queue, ['pdf', 'log', 'both']);
}

/**
 * A fanout message published with an empty routing key (as Celery's broadcasts and Kombu's pidbox are) reaches
 * every bound queue exactly once — also a queue bound twice, with an empty key and another — as does one published
 * with a key. Queued fanout: each queue stores one copy; live fanout: each queue's consumer receives one.
 */
export async function checkFanoutEmptyRoutingKey(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('fanout', { type: 'fanout' });
  const x = new Exchange(exchange, { type: 'fanout' });
  const plain = await context.declareQueue('plain', { exchange: x, routingKey: '' });
  const twice = await context.declareQueue('twice', { exchange: x, routingKey: '', bindings: [new Binding(x, 'other')] });
  const publisher = await context.channel();
  const ids = ['empty-key', 'with-key'];
  if (context.capabilities.fanout === 'live') {
    const one = await recordingConsumer(await context.channel(), [plain]);
    const two = await recordingConsumer(await context.channel(), [twice]);
    await publisher.publish(exchange, '', testMessage('empty-key'));
    await publisher.publish(exchange, 'some.key', testMessage('with-key'));
    await one.log.waitForCount(context, ids.length);
    await two.log.waitForCount(context, ids.length);
    await quietPeriod(context.ms(200));
    expect(one.log.ids, `copies received from ${plain}`).toEqual(ids);
    expect(two.log.ids, `copies received from ${twice} (bound twice)`).toEqual(ids);
    return;
  }
  await publisher.publish(exchange, '', testMessage('empty-key'));
  await publisher.publish(exchange, 'some.key', testMessage('with-key'));
  await expectQueueHolds(context, plain, ids, { ordered: true });
  await expectQueueHolds(context, twice, ids, { ordered: true });
}

function needsExchangeType(type: ExchangeType): (setup: SuiteSetup) => string | undefined {
  return (setup) =>
    setup.capabilities.exchangeTypes.includes(type)
      ? undefined
      : `transport does not list '${type}' in capabilities.exchangeTypes`;
}

/**
 * A batch (`Channel.publishBatch`, or one publish each where a channel has none — what `Producer.publishMessages`
 * does) routes as its messages would one by one, keeps their order, and lands after a publish made before it.
 */
export async function checkBatchPublish(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('batch', { type: 'topic' });
  const x = new Exchange(exchange, { type: 'topic' });
  const all = await context.declareQueue('all', { exchange: x, routingKey: 'jobs.#' });
  const none = await context.declareQueue('none', { exchange: x, routingKey: 'other.#' });
  const direct = await context.declareQueue('direct');
  const channel = await context.channel();
  const publishAll = (target: string, key: string, ids: readonly string[]): Promise<unknown> => {
    const messages = ids.map((id) => testMessage(id));
    return channel.publishBatch
      ? channel.publishBatch(target, key, messages)
      : Promise.all(messages.map((message) => channel.publish(target, key, message)));
  };
  const ids = messageIds('batch', 25);
  const first = channel.publish('', direct, testMessage('before'));
  await Promise.all([first, publishAll('', direct, ids), publishAll(exchange, 'jobs.x', ids)]);
  await expectQueueHolds(context, direct, ['before', ...ids], { ordered: true });
  await expectQueueHolds(context, all, ids, { ordered: true });
  await expectQueueHolds(context, none, []);
  await publishAll('', direct, []);
  await expectQueueHolds(context, direct, []);
}

/**
 * Publishes made on one channel without waiting for each other land in the order they were made, as on an AMQP
 * channel: a store that spreads them over pooled connections must still keep their order.
 */
export async function checkConcurrentPublishOrder(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('in-order');
  const channel = await context.channel();
  const ids = messageIds('concurrent', 60);
  await Promise.all(ids.map((id) => channel.publish('', queue, testMessage(id))));
  await expectQueueHolds(context, queue, ids, { ordered: true });
}

/**
 * Deleting a queue deletes its bindings (as on AMQP): a later publish through the exchange — from this process or
 * another — routes nowhere, so a queue declared again under that name starts empty and unbound.
 */
export async function checkDeleteQueueDropsBindings(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('x', { type: 'direct' });
  const queue = await context.declareQueue('bound', { exchange: new Exchange(exchange, { type: 'direct' }), routingKey: 'k' });
  const admin = await context.admin();
  const other = await context.channel(await context.openTransport());
  await context.publishIds(other, exchange, 'k', ['before-delete']); // the other process has routed through the binding
  await admin.deleteQueue(queue);
  await context.publishIds(admin, exchange, 'k', ['after-delete-here']);
  await context.publishIds(other, exchange, 'k', ['after-delete-there']);
  await admin.declareQueue(new Queue(queue));
  await quietPeriod(context.ms(200));
  await expectQueueHolds(context, queue, []);
}

export const routingGroup: ConformanceGroup = {
  name: 'routing',
  checks: [
    { name: 'the default exchange routes to the queue named by the routing key', run: checkDefaultExchange },
    { name: 'direct: exact routing key, one copy per bound queue', run: checkDirectRouting, skipReason: needsExchangeType('direct') },
    { name: 'topic: * matches one word, # zero or more', run: checkTopicRouting, skipReason: needsExchangeType('topic') },
    {
      name: 'fanout (queued): every bound queue stores a copy',
      run: checkQueuedFanout,
      skipReason: (setup) =>
        needsExchangeType('fanout')(setup) ??
        (setup.capabilities.fanout === 'queued' ? undefined : `transport reports fanout: ${String(setup.capabilities.fanout)}`),
    },
    {
      name: 'fanout (live): every bound queue with a consumer receives a copy',
      run: checkLiveFanout,
      skipReason: (setup) =>
        needsExchangeType('fanout')(setup) ??
        (setup.capabilities.fanout === 'live' ? undefined : `transport reports fanout: ${String(setup.capabilities.fanout)}`),
    },
    { name: 'headers: x-match all and any', run: checkHeadersRouting, skipReason: needsExchangeType('headers') },
    {
      name: 'headers: one queue bound twice with different arguments is routed by both bindings',
      run: checkHeadersTwoBindingsOneQueue,
      skipReason: needsExchangeType('headers'),
    },
    {
      name: 'fanout: an empty routing key delivers exactly one copy per bound queue',
      run: checkFanoutEmptyRoutingKey,
      skipReason: (setup) =>
        needsExchangeType('fanout')(setup) ?? (setup.capabilities.fanout === null ? 'transport reports fanout: null' : undefined),
    },
    { name: 'concurrent publishes on one channel land in the order they were made', run: checkConcurrentPublishOrder },
    { name: "deleting a queue deletes its bindings: later publishes, from any process, do not reach its name", run: checkDeleteQueueDropsBindings },
    { name: 'a batch routes and orders as one publish each would', run: checkBatchPublish, skipReason: needsExchangeType('topic') },
  ],
};
