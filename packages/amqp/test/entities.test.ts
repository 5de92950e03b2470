import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Binding, Exchange, ExchangeNotFound, KqError, PreconditionFailed, Queue, QueueNotFound, type Channel } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { AmqpTransport } from '../src/index';
import { collect, message, namer, newTransport, rabbitmqctl, waitFor } from './helpers';

const up = await brokerReachable('amqp');
const hasCtl = up && (await rabbitmqctl('list_vhosts', 'name')) !== undefined;
const name = namer('entities');

describe.skipIf(!up)('entities and declaration errors', () => {
  let transport: AmqpTransport;
  let channel: Channel;
  const queues: string[] = [];
  const exchanges: string[] = [];

  beforeAll(async () => {
    transport = newTransport({ connectionName: name('conn') });
    channel = await transport.createChannel();
  });

  afterAll(async () => {
    for (const queueName of queues) await channel.deleteQueue(queueName).catch(() => undefined);
    for (const exchange of exchanges) await channel.deleteExchange(exchange).catch(() => undefined);
    await transport.close();
  });

  function track<T extends Queue | Exchange>(entity: T): T {
    (entity instanceof Queue ? queues : exchanges).push(entity.name);
    return entity;
  }

  it('answers a mismatched re-declaration with PreconditionFailed and keeps the channel working, confirms included', async () => {
    const queueName = track(new Queue(name('mismatch'), { durable: false })).name;
    await channel.declareQueue(new Queue(queueName, { durable: false }));
    const inFlight = Array.from({ length: 200 }, (_, index) => channel.publish('', queueName, message(`m${index}`)));
    await expect(channel.declareQueue(new Queue(queueName, { durable: true }))).rejects.toBeInstanceOf(PreconditionFailed);
    await Promise.all(inFlight);
    await expect(channel.declareQueue(new Queue(queueName, { durable: false, maxPriority: 5 }))).rejects.toThrow(/406 PRECONDITION_FAILED/);
    const exchangeName = track(new Exchange(name('typed'), { type: 'topic', durable: false })).name;
    await channel.declareExchange(new Exchange(exchangeName, { type: 'topic', durable: false }));
    await expect(channel.declareExchange(new Exchange(exchangeName, { type: 'fanout', durable: false }))).rejects.toBeInstanceOf(PreconditionFailed);
    // Same channel, still good: identical re-declarations, publishes and consumers.
    const stats = await channel.declareQueue(new Queue(queueName, { durable: false }));
    expect(stats.messageCount).toBe(200);
    const { deliveries, cancel } = await collect(channel, queueName);
    await waitFor('all 200', () => deliveries.length === 200);
    await cancel();
  });

  it('maps missing entities to QueueNotFound and ExchangeNotFound', async () => {
    await expect(channel.checkQueue(name('absent'))).rejects.toBeInstanceOf(QueueNotFound);
    const queueName = track(new Queue(name('binds'), { durable: false })).name;
    await channel.declareQueue(new Queue(queueName, { durable: false }));
    await expect(channel.bindQueue(queueName, name('no-such-exchange'), 'k')).rejects.toBeInstanceOf(ExchangeNotFound);
    await expect(channel.get(name('absent'))).rejects.toBeInstanceOf(QueueNotFound);
    expect((await channel.checkQueue(queueName)).messageCount).toBe(0);
  });

  it('purges and deletes, reporting message counts; unbinds', async () => {
    const exchange = track(new Exchange(name('counts-x'), { type: 'direct', durable: false }));
    const queueName = track(new Queue(name('counts'), { durable: false, exchange, routingKey: 'a', bindings: [new Binding(exchange, 'b')] })).name;
    await channel.declareQueue(new Queue(queueName, { durable: false, exchange, routingKey: 'a', bindings: [new Binding(exchange, 'b')] }));
    for (const key of ['a', 'b', 'b']) await channel.publish(exchange.name, key, message(key));
    expect(await channel.purgeQueue(queueName)).toBe(3);
    await channel.unbindQueue(queueName, exchange.name, 'b');
    await channel.publish(exchange.name, 'b', message('b'));
    await channel.publish(exchange.name, 'a', message('a'));
    expect(await channel.deleteQueue(queueName)).toBe(1);
  });

  it('declares each exchange of a queue’s bindings once, however many bindings use it', async () => {
    const events = track(new Exchange(name('once-x'), { type: 'topic', durable: false }));
    const notices = track(new Exchange(name('once-y'), { type: 'topic', durable: false }));
    const keys = ['worker.online', 'worker.offline', 'worker.elect', 'worker.elect.ack'];
    const queue = track(new Queue(name('once'), { durable: false, bindings: [...keys.map((key) => new Binding(events, key)), new Binding(notices, 'worker.#')] }));
    const declared: string[] = [];
    const declareExchange = channel.declareExchange.bind(channel);
    channel.declareExchange = (exchange) => (declared.push(exchange.name), declareExchange(exchange));
    try {
      await channel.declareQueue(queue);
    } finally {
      channel.declareExchange = declareExchange;
    }
    expect(declared).toEqual([events.name, notices.name]);
    // Every binding is in place all the same.
    for (const [exchange, key] of [...keys.map((key) => [events.name, key]), [notices.name, 'worker.x']]) await channel.publish(exchange as string, key as string, message(key as string));
    await waitFor('five routed', async () => (await channel.checkQueue(queue.name)).messageCount === 5);
  });

  it('refuses another connection’s exclusive queue with a clear error', async () => {
    const queueName = name('exclusive');
    await channel.declareQueue(new Queue(queueName, { durable: false, exclusive: true }));
    const other = newTransport({ connectionName: name('other') });
    try {
      const otherChannel = await other.createChannel();
      const failure = await otherChannel.declareQueue(new Queue(queueName, { durable: false, exclusive: true })).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(KqError);
      expect((failure as Error).message).toMatch(/exclusive to another connection/);
    } finally {
      await other.close();
    }
    await channel.deleteQueue(queueName);
  });

  it.skipIf(!hasCtl)('declares Celery-shaped entities with exactly Kombu’s flags and arguments', async () => {
    const base = name('celery');
    const taskExchange = track(new Exchange(base, { type: 'direct', durable: true }));
    track(new Queue(base, { exchange: taskExchange, routingKey: base }));
    await channel.declareQueue(new Queue(base, { exchange: taskExchange, routingKey: base }));
    const pidbox = track(new Exchange(`${base}.pidbox`, { type: 'fanout', durable: false }));
    const node = track(new Queue(`w1@host.${base}.pidbox`, { exchange: pidbox, durable: false, autoDelete: true, messageTtl: 300_000, expires: 10_000 }));
    await channel.declareQueue(node);
    const events = track(new Exchange(`${base}ev`, { type: 'topic', durable: true }));
    await channel.declareExchange(events);
    const queueListing = (await rabbitmqctl('list_queues', 'name', 'durable', 'auto_delete', 'exclusive', 'arguments')) ?? '';
    const exchangeListing = (await rabbitmqctl('list_exchanges', 'name', 'type', 'durable', 'auto_delete', 'arguments')) ?? '';
    const row = (listing: string, entity: string): string =>
      listing.split('\n').find((line) => line.split('\t')[0] === entity)?.split('\t').slice(1).join(' ') ?? 'missing';
    expect(row(queueListing, base)).toBe('true false false []');
    expect(row(queueListing, node.name)).toBe('false true false [{"x-expires",10000},{"x-message-ttl",300000}]');
    expect(row(exchangeListing, base)).toBe('direct true false []');
    expect(row(exchangeListing, pidbox.name)).toBe('fanout false false []');
    expect(row(exchangeListing, events.name)).toBe('topic true false []');
  });
});
