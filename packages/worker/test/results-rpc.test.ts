import { randomUUID } from 'node:crypto';
import {
  Connection,
  KqError,
  OperationTimeout,
  PreconditionFailed,
  Queue,
  createResultBackend,
  createTransport,
  type Channel,
  type Delivery,
  type ResultMeta,
} from '@kq/core';
import { brokerReachable, brokerUrls, waitFor } from '@kq/test-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { RpcResultBackend, registerRpcResultBackend } from '../src/results/index';

const amqpUp = await brokerReachable('amqp');
/** The RabbitMQ half needs @kq/amqp to load, too (the AMQP transport may not be built yet). */
const amqpReady = amqpUp && (await createTransport(brokerUrls.amqp).then(async (transport) => (await transport.close(), true), () => false));
if (amqpUp && !amqpReady) console.warn('[kq] skipping RPC result tests on RabbitMQ: the amqp:// transport (@kq/amqp) is not available');

const run = `kqtest-rpc-${randomUUID().slice(0, 8)}`;

function meta(taskId: string, overrides: Partial<ResultMeta> = {}): ResultMeta {
  return { status: 'SUCCESS', result: 4, traceback: null, children: [], date_done: '2026-11-21T13:11:41.492297+00:00', task_id: taskId, ...overrides };
}

interface Broker {
  name: string;
  url: () => string;
  enabled: boolean;
}

const brokers: Broker[] = [
  { name: 'memory://', url: () => `memory://${run}`, enabled: true },
  { name: 'RabbitMQ', url: () => brokerUrls.amqp, enabled: amqpReady },
];

for (const broker of brokers) {
  describe.skipIf(!broker.enabled)(`RpcResultBackend on ${broker.name}`, () => {
    const cleanups: Array<() => Promise<unknown>> = [];
    const connect = (): Connection => {
      const connection = new Connection(broker.url());
      cleanups.push(() => connection.close());
      return connection;
    };
    const backend = (connection: Connection, oid: string, options: Partial<ConstructorParameters<typeof RpcResultBackend>[0]> = {}): RpcResultBackend => {
      const created = new RpcResultBackend({ connection, oid, ...options });
      cleanups.unshift(() => created.close());
      return created;
    };
    const rawQueue = async (connection: Connection, name: string): Promise<Channel> => {
      const channel = await connection.createChannel();
      await channel.declareQueue(new Queue(name, { durable: false, autoDelete: false }));
      cleanups.unshift(async () => {
        await channel.deleteQueue(name).catch(() => undefined);
        await channel.close();
      });
      return channel;
    };

    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => undefined);
    });

    it('declares the reply queue <oid> as Celery does (non-durable, auto-delete, x-expires) on the first task call', async () => {
      const connection = connect();
      const oid = `${run}-${randomUUID()}`;
      const client = backend(connection, oid);
      await client.onTaskCall('t');
      const channel = await connection.createChannel();
      cleanups.unshift(() => channel.close());
      // Identical flags are accepted; anything else is a precondition failure (RabbitMQ's 406).
      await channel.declareQueue(new Queue(oid, { durable: false, autoDelete: true, expires: 86_400_000 }));
      expect(client.resultQueue.toArguments()).toEqual({ 'x-expires': 86_400_000 });
      const other = broker.name === 'RabbitMQ' ? await connection.createChannel() : channel;
      await expect(other.declareQueue(new Queue(oid, { durable: false, autoDelete: true, expires: 1000 }))).rejects.toBeInstanceOf(PreconditionFailed);
      expect(backend(connection, `${oid}-b`, { resultExpiresMs: 0 }).resultQueue.toArguments()).toEqual({});
    });

    it('delivers worker-published states to the client that sent the task, pushed by correlation id', async () => {
      const client = backend(connect(), `${run}-${randomUUID()}`);
      const worker = backend(connect(), `${run}-worker-${randomUUID()}`);
      const id = randomUUID();
      await client.onTaskCall(id);
      const result = client.waitFor(id, { timeoutMs: 10_000 });
      await worker.store(meta(id, { status: 'STARTED', result: { pid: 1, hostname: 'kq@h' }, date_done: null }), { replyTo: client.oid, correlationId: id });
      await waitFor(async () => (await client.get(id))?.status === 'STARTED', 5000, 'the STARTED state to arrive');
      await worker.store(meta(id, { result: { sum: 4 } }), { replyTo: client.oid, correlationId: id });
      await expect(result).resolves.toMatchObject({ status: 'SUCCESS', result: { sum: 4 }, task_id: id });
      expect(await client.get(id)).toMatchObject({ status: 'SUCCESS' });
      // A late non-ready state does not hide the result.
      await worker.store(meta(id, { status: 'STARTED', result: null, date_done: null }), { replyTo: client.oid, correlationId: id });
      const marker = randomUUID();
      await worker.store(meta(marker), { replyTo: client.oid });
      await client.waitFor(marker, { timeoutMs: 5000 });
      expect((await client.get(id))?.status).toBe('SUCCESS');
      // A result that already arrived resolves at once.
      await expect(client.waitFor(id, { timeoutMs: 1000 })).resolves.toMatchObject({ status: 'SUCCESS' });
      await client.forget(id);
      expect(await client.get(id)).toBeNull();
    });

    it('publishes Celery’s reply: default exchange, key reply_to, correlation_id, delivery mode 1 (2 if persistent), ≤5.6 body fields first', async () => {
      const connection = connect();
      const queue = `${run}-raw-${randomUUID()}`;
      const channel = await rawQueue(connection, queue);
      const worker = backend(connection, `${run}-worker-${randomUUID()}`);
      const persistent = backend(connection, `${run}-worker-${randomUUID()}`, { persistent: true });
      const id = randomUUID();
      await worker.store(meta(id, { group_id: 'g', parent_id: 'p' }), { replyTo: queue, correlationId: 'corr-1' });
      await persistent.store(meta(id), { replyTo: queue });
      await worker.store(meta(id), {}); // no reply_to: nothing is sent
      const first = await waitForMessage(channel, queue);
      expect(first.deliveryInfo).toMatchObject({ exchange: '', routingKey: queue });
      expect(first.properties).toMatchObject({ correlationId: 'corr-1', deliveryMode: 1 });
      expect(first.contentType).toBe('application/json');
      const body = first.decode<Record<string, unknown>>();
      expect(Object.keys(body)).toEqual(['task_id', 'status', 'result', 'traceback', 'children', 'date_done', 'group_id', 'parent_id']);
      expect(body).toMatchObject({ task_id: id, status: 'SUCCESS', result: 4, traceback: null, children: [] });
      const second = await waitForMessage(channel, queue);
      expect(second.properties).toMatchObject({ correlationId: id, deliveryMode: 2 });
      expect(await channel.get(queue, { noAck: true })).toBeNull();
    });

    it('falls back to the body’s task_id, and shrugs off replies it cannot read', async () => {
      const connection = connect();
      const client = backend(connection, `${run}-${randomUUID()}`);
      await client.onTaskCall('x');
      const channel = await connection.createChannel();
      cleanups.unshift(() => channel.close());
      const send = (body: string, contentType = 'application/json', correlationId?: string): Promise<void> =>
        channel.publish('', client.oid, {
          body: Buffer.from(body),
          contentType,
          contentEncoding: 'utf-8',
          headers: {},
          properties: { deliveryMode: 1, ...(correlationId ? { correlationId } : {}) },
        });
      await send('{not json');
      await send('[1, 2, 3]');
      await send('{"task_id": "no-status"}');
      await send('status: SUCCESS', 'application/x-yaml', 'yaml-task');
      const id = randomUUID();
      await send(JSON.stringify({ task_id: id, status: 'FAILURE', result: { exc_type: 'ValueError', exc_message: ['x'], exc_module: 'builtins' }, traceback: 'tb', children: [] }));
      await expect(client.waitFor(id, { timeoutMs: 5000 })).resolves.toEqual({
        task_id: id,
        status: 'FAILURE',
        result: { exc_type: 'ValueError', exc_message: ['x'], exc_module: 'builtins' },
        traceback: 'tb',
        children: [],
        date_done: null,
      });
      expect(await client.get('yaml-task')).toBeNull();
    });

    it('keeps at most maxBufferedResults results, dropping the oldest', async () => {
      const connection = connect();
      const client = backend(connection, `${run}-${randomUUID()}`, { maxBufferedResults: 2 });
      const ids = [randomUUID(), randomUUID(), randomUUID()];
      await client.onTaskCall(ids[0] as string);
      for (const id of ids) await client.store(meta(id), { replyTo: client.oid });
      await client.waitFor(ids[2] as string, { timeoutMs: 5000 });
      expect(await client.get(ids[0] as string)).toBeNull();
      expect(await client.get(ids[1] as string)).not.toBeNull();
    });

    it('times out, stops on abort, and rejects waiters on close', async () => {
      const client = backend(connect(), `${run}-${randomUUID()}`);
      await expect(client.waitFor('never', { timeoutMs: 100 })).rejects.toBeInstanceOf(OperationTimeout);
      const controller = new AbortController();
      const aborted = client.waitFor('never', { signal: controller.signal });
      controller.abort();
      await expect(aborted).rejects.toBeInstanceOf(OperationTimeout);
      const pending = expect(client.waitFor('never')).rejects.toThrow(/closed/);
      await client.close();
      await pending;
      await expect(client.get('never')).rejects.toBeInstanceOf(KqError);
    });
  });
}

describe('registerRpcResultBackend', () => {
  it('makes rpc:// backends from the app’s connection and oid, and says what is missing', async () => {
    registerRpcResultBackend();
    const connection = new Connection(`memory://${run}-registry`);
    try {
      const backend = await createResultBackend('rpc://', { connection, oid: 'reply-oid', result_expires: 60, persistent: true });
      expect(backend).toBeInstanceOf(RpcResultBackend);
      expect((backend as RpcResultBackend).resultQueue.toArguments()).toEqual({ 'x-expires': 60_000 });
      await backend.close();
      await expect(createResultBackend('rpc://', { oid: 'x' })).rejects.toThrow(/connection/);
      await expect(createResultBackend('rpc://', { connection })).rejects.toThrow(/oid/);
    } finally {
      await connection.close();
    }
  });
});

async function waitForMessage(channel: Channel, queue: string): Promise<Delivery> {
  let found: Delivery | null = null;
  await waitFor(
    async () => {
      found = await channel.get(queue, { noAck: true });
      return found !== null;
    },
    5000,
    `a message on ${queue}`,
  );
  return found as unknown as Delivery;
}
