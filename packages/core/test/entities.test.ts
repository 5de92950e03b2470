import { describe, expect, it } from 'vitest';
import { Binding } from '../src/binding';
import { Exchange } from '../src/exchange';
import { Queue } from '../src/queue';
import { InvalidQueueOptions } from '../src/errors';

describe('Exchange', () => {
  it("has Kombu's defaults", () => {
    const exchange = new Exchange('tasks');
    expect(exchange).toMatchObject({ name: 'tasks', type: 'direct', durable: true, autoDelete: false, internal: false });
    expect(Exchange.DEFAULT.name).toBe('');
  });

  it('compares declarations regardless of argument order', () => {
    const a = new Exchange('e', { type: 'topic', arguments: { x: 1, y: 2 } });
    const b = new Exchange('e', { type: 'topic', arguments: { y: 2, x: 1 } });
    expect(a.sameDeclaration(b)).toBe(true);
    expect(a.sameDeclaration(new Exchange('e', { type: 'fanout' }))).toBe(false);
  });
});

describe('Queue', () => {
  it("has Kombu's defaults and binds to its exchange with routing key ''", () => {
    const queue = new Queue('q', { exchange: 'tasks' });
    expect(queue).toMatchObject({ durable: true, exclusive: false, autoDelete: false });
    expect(queue.exchange?.name).toBe('tasks');
    expect(queue.routingKey).toBe('');
    expect(new Queue('lonely').bindings).toEqual([]);
  });

  it('maps options to RabbitMQ queue arguments as integers', () => {
    const queue = new Queue('q', {
      maxPriority: 10,
      messageTtl: 5000.7,
      expires: 60000,
      deadLetterExchange: 'dlx',
      deadLetterRoutingKey: 'dead',
      maxLength: 100,
      queueType: 'quorum',
      arguments: { 'x-overflow': 'reject-publish' },
    });
    expect(queue.toArguments()).toEqual({
      'x-max-priority': 10,
      'x-message-ttl': 5000,
      'x-expires': 60000,
      'x-dead-letter-exchange': 'dlx',
      'x-dead-letter-routing-key': 'dead',
      'x-max-length': 100,
      'x-queue-type': 'quorum',
      'x-overflow': 'reject-publish',
    });
  });

  it('declares a delivery limit on quorum queues as x-delivery-limit, and keeps it in its options', () => {
    const queue = new Queue('poisonable', { queueType: 'quorum', deliveryLimit: 3 });
    expect(queue.toArguments()).toEqual({ 'x-queue-type': 'quorum', 'x-delivery-limit': 3 });
    expect(new Queue('again', queue.toOptions()).sameDeclaration(new Queue('again', { queueType: 'quorum', deliveryLimit: 3 }))).toBe(true);
    expect(new Queue('raw', { arguments: { 'x-queue-type': 'quorum' }, deliveryLimit: 0 }).toArguments()['x-delivery-limit']).toBe(0);
  });

  it('refuses a delivery limit where RabbitMQ would ignore it (classic queues) or that is not a count', () => {
    expect(() => new Queue('classic', { deliveryLimit: 3 })).toThrow(InvalidQueueOptions);
    expect(() => new Queue('classic', { queueType: 'classic', deliveryLimit: 3 })).toThrow(/needs queueType: 'quorum'/);
    expect(() => new Queue('q', { queueType: 'quorum', deliveryLimit: 1.5 })).toThrow(/whole number/);
    expect(() => new Queue('q', { queueType: 'quorum', deliveryLimit: -1 })).toThrow(InvalidQueueOptions);
  });

  it('keeps extra bindings after the exchange binding', () => {
    const queue = new Queue('q', { exchange: new Exchange('a', { type: 'topic' }), routingKey: 'k.#', bindings: [new Binding('b', 'x')] });
    expect(queue.bindings.map((b) => [b.exchange.name, b.routingKey])).toEqual([
      ['a', 'k.#'],
      ['b', 'x'],
    ]);
  });

  it('tells an identical re-declaration from a different one', () => {
    expect(new Queue('q', { maxPriority: 9 }).sameDeclaration(new Queue('q', { maxPriority: 9 }))).toBe(true);
    expect(new Queue('q', { maxPriority: 9 }).sameDeclaration(new Queue('q'))).toBe(false);
    expect(new Queue('q').sameDeclaration(new Queue('q', { durable: false }))).toBe(false);
  });
});
