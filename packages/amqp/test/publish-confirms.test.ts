import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EncodeError, Exchange, ExchangeNotFound, PublishRejected, Queue, UnroutableError, type Channel } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { AmqpTransport } from '../src/index';
import { collect, message, namer, newTransport, waitFor } from './helpers';

const up = await brokerReachable('amqp');
const name = namer('confirms');

describe.skipIf(!up)('publishing with confirms', () => {
  let transport: AmqpTransport;
  let channel: Channel;
  const queues: string[] = [];
  const exchanges: string[] = [];

  async function queue(label: string, options: ConstructorParameters<typeof Queue>[1] = {}): Promise<string> {
    const queueName = name(label);
    queues.push(queueName);
    await channel.declareQueue(new Queue(queueName, { durable: false, ...options }));
    return queueName;
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

  it('resolves once the broker has the message', async () => {
    const target = await queue('plain');
    await channel.publish('', target, message('one'));
    expect((await channel.checkQueue(target)).messageCount).toBe(1);
  });

  it('rejects an unroutable mandatory message with UnroutableError and resolves the routable ones around it', async () => {
    const exchange = name('direct');
    exchanges.push(exchange);
    const target = await queue('routed', { exchange: new Exchange(exchange, { type: 'direct', durable: false }), routingKey: 'yes' });
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, (_, index) =>
        channel.publish(exchange, index % 3 === 0 ? 'no' : 'yes', message(`m${index % 2}`), { mandatory: true }),
      ),
    );
    results.forEach((result, index) => {
      if (index % 3 === 0) {
        expect(result.status).toBe('rejected');
        const reason = (result as PromiseRejectedResult).reason as UnroutableError;
        expect(reason).toBeInstanceOf(UnroutableError);
        expect(reason.routingKey).toBe('no');
      } else {
        expect(result.status).toBe('fulfilled');
      }
    });
    expect((await channel.checkQueue(target)).messageCount).toBe(26);
  });

  it('refuses a publish to an exchange that does not exist with ExchangeNotFound, without losing the others', async () => {
    const target = await queue('around-missing');
    const missing = name('missing-exchange');
    const results = await Promise.allSettled(
      Array.from({ length: 30 }, (_, index) => (index === 10 ? channel.publish(missing, 'k', message('lost?')) : channel.publish('', target, message(`ok${index}`)))),
    );
    results.forEach((result, index) => {
      if (index === 10) expect((result as PromiseRejectedResult).reason).toBeInstanceOf(ExchangeNotFound);
      else expect(result.status).toBe('fulfilled');
    });
    // At least once: a message unconfirmed when the broker closed the channel is sent again, so it may be there twice.
    const bodies = new Set<string>();
    for (let delivery = await channel.get(target); delivery; delivery = await channel.get(target)) {
      bodies.add(delivery.body.toString());
      await delivery.ack();
    }
    expect(bodies.size).toBe(29);
  });

  it('drops an unroutable message quietly without mandatory, as AMQP does', async () => {
    await expect(channel.publish('', name('nobody-home'), message('x'))).resolves.toBeUndefined();
    await expect(channel.publish('', name('nobody-home'), message('x'), { mandatory: true })).rejects.toBeInstanceOf(UnroutableError);
  });

  it('rejects with PublishRejected when the broker nacks (a full queue with x-overflow=reject-publish)', async () => {
    const target = await queue('full', { maxLength: 1, arguments: { 'x-overflow': 'reject-publish' } });
    await channel.publish('', target, message('fits'));
    const refused = channel.publish('', target, message('overflows'));
    await expect(refused).rejects.toBeInstanceOf(PublishRejected);
    await expect(refused).rejects.toThrow(`queue "${target}" is full (x-overflow=reject-publish)`);
    // The channel is still good after a nack.
    await channel.purgeQueue(target);
    await channel.publish('', target, message('fits again'));
  });

  it('keeps every message when publishing faster than the socket drains (backpressure)', async () => {
    const target = await queue('flood');
    const body = Buffer.alloc(16 * 1024, 7);
    await Promise.all(Array.from({ length: 3000 }, () => channel.publish('', target, message(body))));
    expect((await channel.checkQueue(target)).messageCount).toBe(3000);
  });

  it('refuses a header table amqplib cannot encode with EncodeError, and keeps publishing', async () => {
    const target = await queue('encode');
    await expect(channel.publish('', target, message('big', { headers: { huge: 'x'.repeat(70_000) } }))).rejects.toBeInstanceOf(EncodeError);
    await channel.publish('', target, message('fine'));
    expect((await channel.checkQueue(target)).messageCount).toBe(1);
  });

  it('carries every property and header type through the broker', async () => {
    const target = await queue('props', { maxPriority: 10 });
    const when = new Date('2026-03-04T05:06:07Z');
    await channel.publish(
      '',
      target,
      message(Buffer.from([0, 1, 2, 255]), {
        contentType: 'application/x-test',
        contentEncoding: 'binary',
        headers: { int: 42, neg: -7, big: 2 ** 40, float: 0.25, yes: true, nil: null, list: [1, 'two', [3]], map: { a: { b: 'c' } }, when },
        properties: {
          correlationId: 'corr',
          replyTo: 'reply',
          deliveryMode: 2,
          priority: 7,
          expiration: '60000',
          messageId: 'mid',
          timestamp: 1_700_000_000,
          type: 'kind',
          userId: 'guest',
          appId: 'kq-test',
        },
      }),
    );
    const { deliveries, cancel } = await collect(channel, target);
    const [delivery] = await waitFor('the delivery', () => (deliveries.length === 1 ? deliveries : undefined));
    await cancel();
    expect(delivery!.body).toEqual(Buffer.from([0, 1, 2, 255]));
    expect(delivery!.contentType).toBe('application/x-test');
    expect(delivery!.contentEncoding).toBe('binary');
    expect(delivery!.headers).toEqual({ int: 42, neg: -7, big: 2 ** 40, float: 0.25, yes: true, nil: null, list: [1, 'two', [3]], map: { a: { b: 'c' } }, when });
    expect(delivery!.properties).toEqual({
      correlationId: 'corr',
      replyTo: 'reply',
      deliveryMode: 2,
      priority: 7,
      expiration: '60000',
      messageId: 'mid',
      timestamp: 1_700_000_000,
      type: 'kind',
      userId: 'guest',
      appId: 'kq-test',
    });
    expect(delivery!.deliveryInfo).toMatchObject({ exchange: '', routingKey: target, queue: target, redelivered: false });
    expect(delivery!.deliveryInfo.deliveryTag).toMatch(/^\d+$/);
  });

  it('without confirms, resolves once written and still delivers', async () => {
    const fast = newTransport({ publisherConfirms: false, connectionName: name('noconfirm') });
    try {
      expect(fast.capabilities.publisherConfirms).toBe(false);
      const target = await queue('noconfirm');
      const fastChannel = await fast.createChannel();
      await Promise.all(Array.from({ length: 100 }, (_, index) => fastChannel.publish('', target, message(`n${index}`))));
      await waitFor('100 messages', async () => (await channel.checkQueue(target)).messageCount === 100);
    } finally {
      await fast.close();
    }
  });
});
