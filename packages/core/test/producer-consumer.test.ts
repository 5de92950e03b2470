import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Connection } from '../src/connection';
import { Consumer } from '../src/consumer';
import { ConnectionLost } from '../src/errors';
import { Exchange } from '../src/exchange';
import { MemoryBroker } from '../src/memory/memory-broker';
import { MemoryTransport } from '../src/memory/memory-transport';
import type { Delivery } from '../src/message';
import { Producer } from '../src/producer';
import { Queue } from '../src/queue';
import type { Channel } from '../src/transport';

async function waitFor(predicate: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('Producer and Consumer', () => {
  let connection: Connection;
  const tasks = new Exchange('tasks', { type: 'topic' });
  const dlx = new Exchange('tasks.dlx', { type: 'fanout' });
  const dead = new Queue('tasks.dead', { exchange: dlx });
  const queue = new Queue('tasks.high', { exchange: tasks, routingKey: 'high.#', deadLetterExchange: 'tasks.dlx' });

  beforeEach(async () => {
    MemoryBroker.reset('pc-test');
    connection = new Connection('memory://pc-test');
    await connection.declare(dlx);
    await connection.declare(dead);
  });
  afterEach(() => connection.close());

  it('round-trips JSON through a topic exchange with headers and properties', async () => {
    const received: Array<{ body: unknown; delivery: Delivery }> = [];
    const consumer = new Consumer(connection, {
      queues: [queue],
      prefetch: 10,
      onMessage: async (body, delivery) => {
        received.push({ body, delivery });
        await delivery.ack();
      },
    });
    await consumer.consume();
    const producer = new Producer(connection, { exchange: tasks });
    await producer.publish({ n: 1, when: new Date('2024-01-02T03:04:05Z') }, { routingKey: 'high.cpu', headers: { task: 'add' }, correlationId: 'c1', priority: 3 });
    await waitFor(() => received.length === 1);
    const [first] = received;
    expect(first!.body).toEqual({ n: 1, when: new Date('2024-01-02T03:04:05Z') });
    expect(first!.delivery.headers).toMatchObject({ task: 'add' });
    expect(first!.delivery.properties).toMatchObject({ correlationId: 'c1', priority: 3, deliveryMode: 2 });
    expect(first!.delivery.deliveryInfo).toMatchObject({ exchange: 'tasks', routingKey: 'high.cpu', queue: 'tasks.high', redelivered: false });
    await consumer.cancel();
  });

  it('compresses with zlib and decodes transparently', async () => {
    const producer = new Producer(connection, { exchange: tasks, compression: 'zlib' });
    await connection.declare(queue);
    await producer.publish({ big: 'x'.repeat(10_000) }, { routingKey: 'high.z' });
    const channel = await connection.channel();
    const delivery = (await channel.get('tasks.high'))!;
    expect(delivery.headers['compression']).toBe('application/x-gzip');
    expect(delivery.body.length).toBeLessThan(1000);
    expect(delivery.decode()).toEqual({ big: 'x'.repeat(10_000) });
    await delivery.ack();
  });

  it('rejects disallowed content to the dead-letter exchange and keeps consuming', async () => {
    const received: unknown[] = [];
    const rejected: string[] = [];
    const consumer = new Consumer(connection, {
      queues: [queue],
      accept: ['json'],
      onMessage: async (body, delivery) => {
        received.push(body);
        await delivery.ack();
      },
    });
    consumer.on('rejected', (_delivery, reason) => rejected.push(reason.name));
    await consumer.consume();
    const producer = new Producer(connection, { exchange: tasks });
    await producer.publish(Buffer.from('\x80\x81 not json', 'latin1'), { routingKey: 'high.bad', contentType: 'application/x-python-serialize' });
    await producer.publish({ ok: true }, { routingKey: 'high.good' });
    await waitFor(() => received.length === 1 && rejected.length === 1);
    expect(received).toEqual([{ ok: true }]);
    expect(rejected).toEqual(['ContentDisallowed']);
    const channel = await connection.channel();
    const parked = (await channel.get('tasks.dead'))!;
    expect(parked.body.toString('latin1')).toBe('\x80\x81 not json');
    expect(parked.headers['x-death']).toEqual([expect.objectContaining({ reason: 'rejected', queue: 'tasks.high', count: 1 })]);
    await consumer.cancel();
  });

  it('survives a handler that throws', async () => {
    const seen: unknown[] = [];
    const errors: string[] = [];
    const consumer = new Consumer(connection, {
      queues: [queue],
      onMessage: async (body, delivery) => {
        seen.push(body);
        await delivery.ack();
        if (body === 1) throw new Error('handler bug');
      },
    });
    consumer.on('error', (error) => errors.push(error.message));
    await consumer.consume();
    const producer = new Producer(connection, { exchange: tasks });
    for (const n of [1, 2, 3]) await producer.publish(n, { routingKey: 'high.n' });
    await waitFor(() => seen.length === 3);
    expect(errors).toEqual(['handler bug']);
    await consumer.cancel();
  });
});

describe('Connection.ensure', () => {
  it('retries a recoverable failure on a fresh channel with the topology re-declared', async () => {
    MemoryBroker.reset('ensure-test');
    const transport = new MemoryTransport({ broker: 'ensure-test' });
    const connection = new Connection(transport, { retryPolicy: { maxRetries: 3, intervalStart: 0, intervalStep: 1, intervalMax: 1 } });
    const exchange = new Exchange('ens', { type: 'direct' });
    await connection.declare(exchange);
    await connection.declare(new Queue('ens.q', { exchange, routingKey: 'k' }));

    const first = await connection.channel();
    let failures = 0;
    first.publish = async (): ReturnType<Channel['publish']> => {
      failures++;
      await first.close();
      throw new ConnectionLost('socket closed');
    };
    // Simulate the broker losing its state, as a restarted Redis would: bindings must come back on the new channel.
    MemoryBroker.named('ensure-test').bindings.clear();

    const producer = new Producer(connection, { exchange });
    await producer.publish('hello', { routingKey: 'k' });
    expect(failures).toBe(1);
    const channel = await connection.channel();
    expect(channel).not.toBe(first);
    expect((await channel.get('ens.q'))?.decode()).toBe('hello');
    await connection.close();
  });
});
