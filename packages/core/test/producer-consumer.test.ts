import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Connection } from '../src/connection';
import { Consumer } from '../src/consumer';
import { ConnectionLost, KqError, MessageTooLarge } from '../src/errors';
import { DEFAULT_MAX_MESSAGE_SIZE } from '../src/message-size';
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

describe('Connection.ensure on an open channel', () => {
  it('makes as many attempts as retryOver would: the first directly, then maxRetries more', async () => {
    MemoryBroker.reset('ensure-count');
    const connection = new Connection(new MemoryTransport({ broker: 'ensure-count' }), {
      retryPolicy: { maxRetries: 2, intervalStart: 0, intervalStep: 0, intervalMax: 0 },
    });
    await connection.channel();
    let attempts = 0;
    await expect(
      connection.ensure(async () => {
        attempts++;
        throw new ConnectionLost('down');
      }),
    ).rejects.toThrow('down');
    expect(attempts).toBe(3);
    await connection.close();
  });

  it('turns a synchronous throw into a rejection and does not retry what is not recoverable', async () => {
    MemoryBroker.reset('ensure-sync');
    const connection = new Connection(new MemoryTransport({ broker: 'ensure-sync' }));
    await connection.channel();
    let attempts = 0;
    const outcome = connection.ensure((): Promise<void> => {
      attempts++;
      throw new TypeError('bad input');
    });
    await expect(outcome).rejects.toThrow(TypeError);
    expect(attempts).toBe(1);
    await connection.close();
  });
});

describe('Connection.maybeDeclare', () => {
  it('declares once for many concurrent callers, and not again once declared', async () => {
    MemoryBroker.reset('maybe-declare');
    const connection = new Connection(new MemoryTransport({ broker: 'maybe-declare' }));
    const channel = await connection.channel();
    let declarations = 0;
    const declareQueue = channel.declareQueue.bind(channel);
    channel.declareQueue = async (queue) => {
      declarations++;
      return declareQueue(queue);
    };
    const queue = new Queue('coalesced');
    await Promise.all(Array.from({ length: 50 }, () => connection.maybeDeclare(queue)));
    await connection.maybeDeclare(new Queue('coalesced'));
    expect(declarations).toBe(1);
    expect(connection.hasDeclared(new Queue('coalesced'))).toBe(true);
    await connection.close();
  });

  it('lets the next caller try again after a failed declaration', async () => {
    MemoryBroker.reset('maybe-declare-fail');
    const connection = new Connection(new MemoryTransport({ broker: 'maybe-declare-fail' }));
    const channel = await connection.channel();
    const declareQueue = channel.declareQueue.bind(channel);
    let fail = true;
    channel.declareQueue = async (queue) => {
      if (fail) throw new TypeError('refused');
      return declareQueue(queue);
    };
    const queue = new Queue('retry-declare');
    await expect(Promise.all([connection.maybeDeclare(queue), connection.maybeDeclare(queue)])).rejects.toThrow('refused');
    fail = false;
    await connection.maybeDeclare(queue);
    expect(connection.hasDeclared(queue)).toBe(true);
    await connection.close();
  });
});

describe('Producer.publishMessages', () => {
  const message = (text: string) => new Producer(new Connection('memory://unused')).prepare(text);

  it('publishes a batch in order through the channel one by one when it has no batch path', async () => {
    MemoryBroker.reset('batch-fallback');
    const connection = new Connection('memory://batch-fallback');
    const queue = new Queue('batch.q');
    const channel = await connection.channel();
    (channel as { publishBatch?: Channel['publishBatch'] }).publishBatch = undefined;
    const producer = new Producer(connection);
    await producer.publishMessages(['a', 'b', 'c'].map(message), { routingKey: 'batch.q', declare: [queue] });
    const bodies: unknown[] = [];
    for (let delivery = await channel.get('batch.q'); delivery; delivery = await channel.get('batch.q')) bodies.push(delivery.decode());
    expect(bodies).toEqual(['a', 'b', 'c']);
    await connection.close();
  });

  it('hands the whole batch to Channel.publishBatch where there is one, and retries it whole', async () => {
    MemoryBroker.reset('batch-native');
    const connection = new Connection('memory://batch-native', { retryPolicy: { maxRetries: 1, intervalStart: 0, intervalStep: 0 } });
    const channel = await connection.channel();
    const batches: number[] = [];
    channel.publishBatch = async (_exchange, _routingKey, messages) => {
      batches.push(messages.length);
      if (batches.length === 1) throw new ConnectionLost('dropped');
    };
    await new Producer(connection).publishMessages(['a', 'b'].map(message), { routingKey: 'q' });
    expect(batches).toEqual([2]);
    // The retry ran on a fresh channel (the failed one was dropped) and published both.
    const fresh = await connection.channel();
    expect(fresh).not.toBe(channel);
    expect((await fresh.get('q'))?.decode()).toBe('a');
    expect((await fresh.get('q'))?.decode()).toBe('b');
    await connection.close();
  });
});

describe('maxMessageSize', () => {
  afterEach(() => MemoryBroker.reset('max-size'));

  it('refuses an oversize body on publish, naming its size, the limit and the setting, before anything is sent', async () => {
    const connection = new Connection('memory://max-size', { maxMessageSize: 1000 });
    const queue = new Queue('max-size.q');
    await connection.declare(queue);
    const producer = new Producer(connection);
    const oversize = producer.prepare('x'.repeat(1000)); // 1,002 bytes of JSON
    await expect(producer.publishMessage(oversize, { routingKey: 'max-size.q' })).rejects.toThrow(MessageTooLarge);
    await expect(producer.publish('x'.repeat(1000), { routingKey: 'max-size.q' })).rejects.toThrow(
      /is 1,002 bytes, over the maxMessageSize limit of 1,000 bytes\. .*raise maxMessageSize/,
    );
    // A batch is all or none.
    await expect(producer.publishMessages([producer.prepare('ok'), oversize], { routingKey: 'max-size.q' })).rejects.toThrow(MessageTooLarge);
    await producer.publish('x'.repeat(998), { routingKey: 'max-size.q' });
    expect((await (await connection.channel()).checkQueue('max-size.q')).messageCount).toBe(1);
    await connection.close();
  });

  it('defaults to 64 MiB, takes null for no limit, and refuses a limit that is not a positive number of bytes', () => {
    expect(new Connection('memory://max-size').maxMessageSize).toBe(DEFAULT_MAX_MESSAGE_SIZE);
    expect(DEFAULT_MAX_MESSAGE_SIZE).toBe(64 * 1024 * 1024);
    expect(new Connection('memory://max-size', { maxMessageSize: null }).maxMessageSize).toBeNull();
    expect(() => new Connection('memory://max-size', { maxMessageSize: 0 })).toThrow(/maxMessageSize must be a positive whole number of bytes/);
    expect(() => new Connection('memory://max-size', { maxMessageSize: 1.5 })).toThrow(KqError);
  });

  it('rejects an oversize or exploding body on receive, unread and with the reason, and keeps consuming', async () => {
    // The sender has no limit (a hostile or misconfigured producer); the consumer's connection has one.
    const sender = new Connection('memory://max-size', { maxMessageSize: null });
    const connection = new Connection('memory://max-size', { maxMessageSize: 1000 });
    const dlx = new Exchange('max-size.dlx', { type: 'fanout' });
    const dead = new Queue('max-size.dead', { exchange: dlx });
    const queue = new Queue('max-size.in', { deadLetterExchange: 'max-size.dlx' });
    for (const entity of [dlx, dead, queue]) await connection.declare(entity);
    for (const decode of [true, false]) {
      const received: unknown[] = [];
      const rejected: Error[] = [];
      const consumer = new Consumer(connection, {
        queues: [queue],
        decode,
        onMessage: async (body, delivery) => {
          received.push(decode ? body : 'raw');
          await delivery.ack();
        },
      });
      consumer.on('rejected', (_delivery, reason) => rejected.push(reason));
      await consumer.consume();
      const producer = new Producer(sender);
      await producer.publish('x'.repeat(2000), { routingKey: 'max-size.in' });
      // 40 bytes of zlib inflating to 100 KB: the size as sent passes, the inflated size does not.
      if (decode) await producer.publish('0'.repeat(100_000), { routingKey: 'max-size.in', compression: 'zlib' });
      await producer.publish('small', { routingKey: 'max-size.in' });
      await waitFor(() => received.length === 1 && rejected.length === (decode ? 2 : 1));
      expect(received).toEqual([decode ? 'small' : 'raw']);
      expect(rejected.every((reason) => reason instanceof MessageTooLarge)).toBe(true);
      expect(rejected.map((reason) => reason.message)).toEqual(
        decode ? [expect.stringMatching(/is 2,002 bytes, over/), expect.stringMatching(/inflates to more than 1,000 bytes/)] : [expect.stringMatching(/is 2,002 bytes/)],
      );
      await consumer.cancel();
    }
    const channel = await connection.channel();
    const parked = (await channel.get('max-size.dead'))!;
    expect(parked.body.length).toBe(2002);
    await sender.close();
    await connection.close();
  });
});
