import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Exchange, Queue, type Channel, type Delivery } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { AmqpTransport } from '../src/index';
import { AMQP_URL, message, namer, newTransport, waitFor } from './helpers';

const execFileAsync = promisify(execFile);
const PYTHON = '/usr/bin/python3';
const PEER = fileURLToPath(new URL('./interop/kombu_peer.py', import.meta.url));
// Kombu reads a missing vhost as '/', like kq.
const PYTHON_URL = AMQP_URL;

async function pythonReady(): Promise<boolean> {
  try {
    await execFileAsync(PYTHON, ['-c', 'import kombu, amqp, celery']);
    return true;
  } catch {
    return false;
  }
}

async function peer<T>(...args: string[]): Promise<T> {
  const { stdout } = await execFileAsync(PYTHON, [PEER, args[0] as string, PYTHON_URL, ...args.slice(1)], { timeout: 30_000 });
  return JSON.parse(stdout) as T;
}

interface Typed {
  t: string;
  v: unknown;
}

/** Python's view of a value, back in plain JSON, with the type names kept for the checks. */
function untype(value: Typed): unknown {
  if (value.t === 'list') return (value.v as Typed[]).map(untype);
  if (value.t === 'dict') return Object.fromEntries(Object.entries(value.v as Record<string, Typed>).map(([key, item]) => [key, untype(item)]));
  return value.v;
}

const up = await brokerReachable('amqp');
const python = up && (await pythonReady());
if (up && !python) console.warn('[kq amqp] skipping Python interop tests: /usr/bin/python3 with kombu, amqp and celery is not available');
const name = namer('interop');

describe.skipIf(!python)('interop with Python Kombu / py-amqp', () => {
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

  async function queue(label: string): Promise<string> {
    const queueName = name(label);
    queues.push(queueName);
    await channel.declareQueue(new Queue(queueName, { durable: false, maxPriority: 10 }));
    return queueName;
  }

  it('consumes what Kombu publishes, every header type and property intact (py-amqp’s 64-bit L tag included)', async () => {
    const target = await queue('from-python');
    await peer('publish', target);
    const delivery = await waitFor<Delivery>('the Python message', async () => (await channel.get(target)) ?? undefined);
    await delivery.ack();
    expect(delivery.body.toString()).toBe('{"from": "python"}');
    expect(delivery.contentType).toBe('application/json');
    expect(delivery.contentEncoding).toBe('utf-8');
    expect(delivery.decode()).toEqual({ from: 'python' });
    expect(delivery.headers).toEqual({
      int: 42,
      neg: -7,
      zero: 0,
      big: 2 ** 40,
      negbig: -(2 ** 40),
      float: 0.25,
      yes: true,
      no: false,
      nil: null,
      text: 'héllo',
      list: [1, 'two', null, [3, 4.5]],
      map: { a: { b: 1, c: [true] } },
      timelimit: [null, null],
      when: new Date('2026-01-02T03:04:05Z'),
      price: -1.25,
    });
    expect(delivery.properties).toEqual({
      deliveryMode: 2,
      priority: 5,
      correlationId: 'corr-py',
      replyTo: 'reply-py',
      expiration: '60000',
      messageId: 'mid-py',
      timestamp: 1_700_000_000,
      type: 'kind-py',
      userId: 'guest',
      appId: 'kombu-peer',
    });
    expect(delivery.deliveryInfo).toMatchObject({ exchange: '', routingKey: target, redelivered: false });
  });

  it('publishes what Kombu consumes, with py-amqp’s field types', async () => {
    const target = await queue('to-python');
    await channel.publish(
      '',
      target,
      message('{"from": "kq"}', {
        contentType: 'application/json',
        contentEncoding: 'utf-8',
        headers: {
          int: 42,
          neg: -7,
          retries: 200, // plain amqplib would tag this 's', which py-amqp reads as a short string
          tiny: -1, // plain amqplib would tag this 'b', which py-amqp reads as 255
          big: 2 ** 40,
          negbig: -(2 ** 40),
          float: 0.25,
          yes: true,
          nil: null,
          text: 'héllo',
          list: [1, 'two', null, [3, 4.5]],
          map: { a: { b: 1, c: [true] } },
          timelimit: [null, null],
          when: new Date('2026-01-02T03:04:05Z'),
          bytes: Buffer.from([0, 1, 2]),
        },
        properties: {
          deliveryMode: 2,
          priority: 5,
          correlationId: 'corr-kq',
          replyTo: 'reply-kq',
          expiration: '60000',
          messageId: 'mid-kq',
          timestamp: 1_700_000_000,
          type: 'kind-kq',
          userId: 'guest',
          appId: 'kq',
        },
      }),
    );
    const seen = await peer<{ body: string; headers: Record<string, Typed>; properties: Record<string, Typed>; delivery_info: Record<string, Typed> }>(
      'consume',
      target,
      '10',
    );
    expect(Buffer.from(seen.body, 'base64').toString()).toBe('{"from": "kq"}');
    const types = Object.fromEntries(Object.entries(seen.headers).map(([key, value]) => [key, value.t]));
    expect(types).toEqual({
      int: 'int',
      neg: 'int',
      retries: 'int',
      tiny: 'int',
      big: 'int',
      negbig: 'float', // documented: a negative integer beyond 32 bits travels as a double
      float: 'float',
      yes: 'bool',
      nil: 'None',
      text: 'str',
      list: 'list',
      map: 'dict',
      timelimit: 'list',
      when: 'datetime',
      bytes: 'bytes',
    });
    const values = Object.fromEntries(Object.entries(seen.headers).map(([key, value]) => [key, untype(value)]));
    expect(values).toEqual({
      int: 42,
      neg: -7,
      retries: 200,
      tiny: -1,
      big: 2 ** 40,
      negbig: -(2 ** 40),
      float: 0.25,
      yes: true,
      nil: null,
      text: 'héllo',
      list: [1, 'two', null, [3, 4.5]],
      map: { a: { b: 1, c: [true] } },
      timelimit: [null, null],
      when: '2026-01-02T03:04:05',
      bytes: Buffer.from([0, 1, 2]).toString('base64'),
    });
    expect(seen.headers['map']).toEqual({ t: 'dict', v: { a: { t: 'dict', v: { b: { t: 'int', v: 1 }, c: { t: 'list', v: [{ t: 'bool', v: true }] } } } } });
    const properties = Object.fromEntries(Object.entries(seen.properties).map(([key, value]) => [key, untype(value)]));
    expect(properties).toEqual({
      content_type: 'application/json',
      content_encoding: 'utf-8',
      delivery_mode: 2,
      priority: 5,
      correlation_id: 'corr-kq',
      reply_to: 'reply-kq',
      expiration: '60000',
      message_id: 'mid-kq',
      timestamp: 1_700_000_000,
      type: 'kind-kq',
      user_id: 'guest',
      app_id: 'kq',
    });
    expect(untype(seen.delivery_info['routing_key'] as Typed)).toBe(target);
  });

  describe('Celery’s shared entities (renamed for this run)', () => {
    interface Declared {
      queues: string[];
      exchanges: string[];
      reply_oid: string;
      event_queue: string;
      rpc_queue: string;
    }

    /** Celery 5.2's entities as kq declares them for Python peers (docs/wire.md#amqp-rabbitmq). */
    function kqEntities(prefix: string, declared: Pick<Declared, 'reply_oid' | 'event_queue' | 'rpc_queue'>): Array<Exchange | Queue> {
      const task = new Exchange(`${prefix}celery`, { type: 'direct', durable: true });
      const pidbox = new Exchange(`${prefix}celery.pidbox`, { type: 'fanout', durable: false });
      const reply = new Exchange(`reply.${prefix}celery.pidbox`, { type: 'direct', durable: false });
      const events = new Exchange(`${prefix}celeryev`, { type: 'topic', durable: true });
      return [
        task,
        new Queue(`${prefix}celery`, { exchange: task, routingKey: `${prefix}celery` }),
        pidbox,
        new Queue(`w1@kqinterop.${prefix}celery.pidbox`, { exchange: pidbox, durable: false, autoDelete: true, expires: 10_000, messageTtl: 300_000 }),
        reply,
        new Queue(`${declared.reply_oid}.reply.${prefix}celery.pidbox`, {
          exchange: reply,
          routingKey: declared.reply_oid,
          durable: false,
          autoDelete: true,
          expires: 10_000,
          messageTtl: 300_000,
        }),
        events,
        new Queue(declared.event_queue, { exchange: events, routingKey: '#', durable: false, autoDelete: true, expires: 60_000, messageTtl: 5_000 }),
        new Queue(declared.rpc_queue, { durable: false, autoDelete: true, expires: 86_400_000 }),
      ];
    }

    async function declareWithKq(entities: Array<Exchange | Queue>): Promise<void> {
      for (const entity of entities) {
        if (entity instanceof Exchange) {
          exchanges.push(entity.name);
          await channel.declareExchange(entity);
        } else {
          queues.push(entity.name);
          await channel.declareQueue(entity);
        }
      }
    }

    it('are accepted by RabbitMQ when kq declares them after Python (no 406)', async () => {
      const prefix = `${name('a')}.`;
      const declared = await peer<Declared>('declare-celery', prefix);
      queues.push(...declared.queues);
      exchanges.push(...declared.exchanges);
      await declareWithKq(kqEntities(prefix, declared));
    });

    it('are accepted by Python when kq declared them first (no 406)', async () => {
      const prefix = `${name('b')}.`;
      const names = { reply_oid: name('oid'), event_queue: `${prefix}celeryev.${name('ev')}`, rpc_queue: name('rpc') };
      await declareWithKq(kqEntities(prefix, names));
      const declared = await peer<Declared>('declare-celery', prefix, names.reply_oid, names.event_queue, names.rpc_queue);
      queues.push(...declared.queues);
      exchanges.push(...declared.exchanges);
      expect(declared.event_queue).toBe(names.event_queue);
      expect(declared.rpc_queue).toBe(names.rpc_queue);
      expect(new Set(declared.queues)).toEqual(new Set(kqEntities(prefix, names).filter((entity) => entity instanceof Queue).map((entity) => entity.name)));
    });
  });
});
