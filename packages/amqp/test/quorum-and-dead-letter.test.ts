import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Exchange, Queue, type Channel, type Delivery } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { AmqpTransport } from '../src/index';
import { message, namer, newTransport, waitFor } from './helpers';

const up = await brokerReachable('amqp');
const name = namer('dlx');

describe.skipIf(!up)('quorum queues, TTL and dead-lettering', () => {
  let transport: AmqpTransport;
  let channel: Channel;
  const queues: string[] = [];
  const exchanges: string[] = [];

  async function queue(label: string, options: ConstructorParameters<typeof Queue>[1] = {}): Promise<string> {
    const queueName = name(label);
    queues.push(queueName);
    await channel.declareQueue(new Queue(queueName, options));
    return queueName;
  }

  /** A dead-letter exchange (fanout) with one queue behind it. */
  async function deadLetterTarget(label: string): Promise<{ exchange: string; queue: string }> {
    const exchange = name(`${label}-dlx`);
    exchanges.push(exchange);
    const target = await queue(`${label}-dead`, { durable: false, exchange: new Exchange(exchange, { type: 'fanout', durable: false }) });
    return { exchange, queue: target };
  }

  async function next(queueName: string): Promise<Delivery> {
    return waitFor(`a message in ${queueName}`, async () => (await channel.get(queueName)) ?? undefined);
  }

  beforeAll(async () => {
    transport = newTransport({ connectionName: name('conn') });
    channel = await transport.createChannel();
  });

  afterAll(async () => {
    for (const queueName of queues) await channel.deleteQueue(queueName).catch(() => undefined);
    for (const exchange of exchanges) await channel.deleteExchange(exchange).catch(() => undefined);
    await transport.close();
  });

  it('consumes a quorum queue and reports x-delivery-count as deliveryCount', async () => {
    const target = await queue('quorum', { queueType: 'quorum' });
    await channel.publish('', target, message('q'));
    const seen: Delivery[] = [];
    const handle = await channel.consume({
      queues: [target],
      prefetch: 1,
      onMessage: (delivery) => {
        seen.push(delivery);
        void (seen.length < 3 ? delivery.requeue() : delivery.ack());
      },
    });
    await waitFor('three deliveries', () => seen.length === 3);
    await handle.cancel();
    expect(seen.map((delivery) => delivery.deliveryInfo.redelivered)).toEqual([false, true, true]);
    expect(seen.map((delivery) => delivery.deliveryInfo.deliveryCount)).toEqual([undefined, 1, 2]);
    expect(seen[2]!.headers['x-delivery-count']).toBe(2);
  });

  it('expires messages after the queue TTL into the dead-letter exchange, with x-death', async () => {
    const dead = await deadLetterTarget('ttl');
    const source = await queue('ttl', { durable: false, messageTtl: 100, deadLetterExchange: dead.exchange });
    await channel.publish('', source, message('short-lived', { headers: { app: 'x' } }));
    const delivery = await next(dead.queue);
    await delivery.ack();
    expect(delivery.body.toString()).toBe('short-lived');
    expect(delivery.headers['app']).toBe('x');
    expect(delivery.deliveryInfo.deliveryCount).toBe(1);
    const [death] = delivery.headers['x-death'] as Array<Record<string, unknown>>;
    expect(death).toMatchObject({ queue: source, reason: 'expired', count: 1, exchange: '' });
    expect(death!['time']).toBeInstanceOf(Date);
    expect((await channel.checkQueue(source)).messageCount).toBe(0);
  });

  it('honours a per-message expiration', async () => {
    const dead = await deadLetterTarget('expiration');
    const source = await queue('expiration', { durable: false, deadLetterExchange: dead.exchange });
    await channel.publish('', source, message('brief', { properties: { expiration: '50' } }));
    const delivery = await next(dead.queue);
    await delivery.ack();
    expect((delivery.headers['x-death'] as Array<Record<string, unknown>>)[0]).toMatchObject({ reason: 'expired', 'original-expiration': '50' });
  });

  it('takes a message past its delivery limit out of a quorum queue, into the dead-letter exchange', async () => {
    const dead = await deadLetterTarget('limit');
    const source = await queue('limit', { queueType: 'quorum', deliveryLimit: 2, deadLetterExchange: dead.exchange });
    await channel.publish('', source, message('poison'));
    let deliveries = 0;
    const handle = await channel.consume({
      queues: [source],
      prefetch: 1,
      onMessage: (delivery) => {
        deliveries++;
        void delivery.requeue();
      },
    });
    const delivery = await next(dead.queue);
    await handle.cancel();
    await delivery.ack();
    // The first delivery and two more: the limit counts redeliveries.
    expect(deliveries).toBe(3);
    expect(delivery.body.toString()).toBe('poison');
    expect((delivery.headers['x-death'] as Array<Record<string, unknown>>)[0]).toMatchObject({ queue: source, reason: 'delivery_limit' });
    expect((await channel.checkQueue(source)).messageCount).toBe(0);
  });

  it('dead-letters rejected messages, quorum and classic, and counts the deaths', async () => {
    for (const queueType of ['classic', 'quorum'] as const) {
      const dead = await deadLetterTarget(`reject-${queueType}`);
      const source = await queue(`reject-${queueType}`, { queueType, durable: true, deadLetterExchange: dead.exchange });
      await channel.publish('', source, message('refused'));
      await (await next(source)).reject();
      const first = await next(dead.queue);
      expect(first.deliveryInfo.deliveryCount).toBe(1);
      expect((first.headers['x-death'] as Array<Record<string, unknown>>)[0]).toMatchObject({ queue: source, reason: 'rejected' });
      await first.ack();
    }
  });
});
