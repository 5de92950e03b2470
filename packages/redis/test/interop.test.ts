import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Exchange, Queue, type Channel, type Delivery, type OutgoingMessage } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodeEnvelope, encodeEnvelope, type RedisTransport } from '../src/index';
import { makeTransport, rawClient, redisUrl, waitFor } from './helpers/redis-test-env';

/**
 * Interop runs on its own database, without a key prefix, as a real Celery deployment would: one no other test file
 * uses, since Kombu's sweep here (visibility_timeout 1 s) restores every unacked entry of the database older than
 * that, including deliveries a kq process of a file running alongside still holds under the default timeout.
 */
const DB = 4;
const PYTHON = '/usr/bin/python3';
const PEER = fileURLToPath(new URL('./interop/kombu_peer.py', import.meta.url));
const up = await brokerReachable('redis');
const kombu = up && existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import kombu, redis']).status === 0;
if (up && !kombu) console.warn('[kq] skipping the Kombu interop tests: /usr/bin/python3 cannot import kombu and redis');

interface PyMessage {
  body_b64: string;
  content_type: string;
  content_encoding: string;
  headers: Record<string, unknown>;
  properties: Record<string, unknown>;
  delivery_info: { exchange: string; routing_key: string; redelivered: boolean | null };
  priority: number | null;
}

/** A running Python Kombu peer: its JSON output lines, and a promise of its exit. */
class KombuPeer {
  readonly lines: unknown[] = [];
  readonly exited: Promise<number>;
  #stderr = '';

  constructor(spec: Record<string, unknown>) {
    const child = spawn(PYTHON, [PEER], { stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end(JSON.stringify({ url: redisUrl(DB), ...spec }));
    createInterface({ input: child.stdout }).on('line', (line) => this.lines.push(JSON.parse(line)));
    child.stderr.on('data', (chunk: Buffer) => (this.#stderr += chunk.toString()));
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
  }

  async ready(): Promise<void> {
    await waitFor(() => this.lines.includes('ready'), 15_000, `the Kombu peer to start consuming (stderr: ${this.#stderr})`);
  }

  /** Waits for the peer to finish; fails with its stderr if it did not exit cleanly. */
  async done(): Promise<void> {
    const code = await this.exited;
    if (code !== 0) throw new Error(`kombu_peer.py exited with ${code}: ${this.#stderr}`);
  }

  get messages(): PyMessage[] {
    return this.lines.filter((line): line is PyMessage => typeof line === 'object' && line !== null && 'body_b64' in line);
  }
}

async function python(spec: Record<string, unknown>): Promise<KombuPeer> {
  const peer = new KombuPeer(spec);
  await peer.done();
  return peer;
}

function outgoing(text: string, extra: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'application/json', contentEncoding: 'utf-8', headers: {}, properties: { deliveryMode: 2 }, ...extra };
}

async function drain(channel: Channel, queue: string, count: number): Promise<Delivery[]> {
  const got: Delivery[] = [];
  const consumer = await channel.consume({ queues: [queue], prefetch: 1, onMessage: (d) => void d.ack().then(() => got.push(d)) });
  await waitFor(() => got.length >= count, 10_000, `${count} messages on ${queue}`);
  await consumer.cancel();
  return got;
}

describe.skipIf(!kombu)('interop with Python Kombu 5 (db 4)', () => {
  const run = `ix-${randomUUID().slice(0, 8)}`;
  const name = (suffix: string): string => `${run}.${suffix}`;
  let redis: Redis;
  let transport: RedisTransport;
  let channel: Channel;

  beforeAll(() => {
    redis = rawClient(DB);
  });
  afterEach(async () => {
    await transport?.close();
  });
  afterAll(async () => {
    const keys = await redis.keys(`*${run}*`);
    if (keys.length > 0) await redis.del(...keys);
    for (const hash of ['_kq.queues', '_kq.exchanges']) {
      const fields = (await redis.hkeys(hash)).filter((field) => field.includes(run));
      if (fields.length > 0) await redis.hdel(hash, ...fields);
    }
    redis.disconnect();
  });

  async function open(options: Parameters<typeof makeTransport>[1] = {}): Promise<void> {
    transport = makeTransport('', { pollIntervalMs: 200, ...options }, DB);
    channel = await transport.createChannel();
  }

  it('Python publishes, kq consumes the same body, headers and properties', async () => {
    await open();
    const queue = name('py2kq');
    const headers = { lang: 'py', task: 'proj.add', id: 'id-1', eta: null, retries: 0, timelimit: [null, null], argsrepr: '(2, 2)', nested: { a: [1, 2.5] } };
    const body = '{"greeting": "h\u00e9llo \u2603"}';
    await python({
      cmd: 'publish',
      declare: [{ name: queue }],
      messages: [{ body, routing_key: queue, headers, properties: { correlation_id: 'id-1', reply_to: 'rq', priority: 5, expiration: 60 } }],
    });
    const raw = (await redis.lindex(`${queue}\x06\x163`, 0)) as string;
    expect(encodeEnvelope(decodeEnvelope(raw, { queue }))).toBe(raw);
    const [delivery] = (await drain(channel, queue, 1)) as [Delivery];
    expect(delivery.body.toString('utf8')).toBe(body);
    expect(delivery.headers).toEqual(headers);
    expect(delivery.contentType).toBe('application/json');
    expect(delivery.contentEncoding).toBe('utf-8');
    expect(delivery.properties).toEqual({ correlationId: 'id-1', replyTo: 'rq', deliveryMode: 2, priority: 5, expiration: '60000' });
    expect(delivery.deliveryInfo).toMatchObject({ exchange: '', routingKey: queue, queue, redelivered: false });
  });

  it('kq publishes, Python consumes the same body, headers and properties', async () => {
    await open();
    const queue = name('kq2py');
    await channel.declareQueue(new Queue(queue));
    const headers = { lang: 'ts', task: 'proj.mul', id: 'id-2', retries: 1, timelimit: [10, 5], unicode: 'caf\u00e9' };
    const body = '[[3, 4], {}, {"chain": null}]';
    await channel.publish('', queue, outgoing(body, { headers, properties: { correlationId: 'id-2', replyTo: 'rq2', deliveryMode: 2, priority: 3, expiration: '5000' } }));
    const peer = await python({ cmd: 'consume', queues: [{ name: queue }], count: 1 });
    const [got] = peer.messages as [PyMessage];
    expect(Buffer.from(got.body_b64, 'base64').toString('utf8')).toBe(body);
    expect(got.headers).toEqual(headers);
    expect(got.content_type).toBe('application/json');
    expect(got.properties).toMatchObject({ correlation_id: 'id-2', reply_to: 'rq2', delivery_mode: 2, priority: 3, expiration: '5000' });
    expect(got.delivery_info).toMatchObject({ exchange: '', routing_key: queue });
    // Python acked it: nothing of this queue's is left in Kombu's unacked hash (which may hold other runs' entries).
    const unacked = Object.values(await redis.hgetall('unacked'));
    expect(unacked.filter((entry) => entry.includes(`"${queue}"`))).toEqual([]);
  });

  it('bindings Python declared route kq publishes (direct and topic), and the reverse', async () => {
    await open();
    const [direct, topic, qd, qt] = [name('direct'), name('topic'), name('qd'), name('qt')];
    await python({
      cmd: 'publish',
      declare: [
        { name: qd, exchange: direct, type: 'direct', routing_key: 'kd' },
        { name: qt, exchange: topic, type: 'topic', routing_key: 'a.#' },
      ],
      messages: [],
    });
    // kq never declared these exchanges: it reads the type from Kombu's binding sets.
    await channel.publish(direct, 'kd', outgoing('"to direct"'));
    await channel.publish(direct, 'other', outgoing('"dropped"'));
    await channel.publish(topic, 'a.b.c', outgoing('"to topic"'));
    const peer = await python({ cmd: 'consume', queues: [{ name: qd, exchange: direct, type: 'direct', routing_key: 'kd' }, { name: qt, exchange: topic, type: 'topic', routing_key: 'a.#' }], count: 2 });
    expect(peer.messages.map((m) => Buffer.from(m.body_b64, 'base64').toString()).sort()).toEqual(['"to direct"', '"to topic"']);

    const [direct2, topic2, qd2, qt2] = [name('direct2'), name('topic2'), name('qd2'), name('qt2')];
    await channel.declareQueue(new Queue(qd2, { exchange: new Exchange(direct2, { type: 'direct' }), routingKey: 'kd2' }));
    await channel.declareQueue(new Queue(qt2, { exchange: new Exchange(topic2, { type: 'topic' }), routingKey: 'x.*' }));
    await python({ cmd: 'publish', exchange: direct2, type: 'direct', messages: [{ body: '"py direct"', routing_key: 'kd2' }] });
    await python({ cmd: 'publish', exchange: topic2, type: 'topic', messages: [{ body: '"py topic"', routing_key: 'x.y' }, { body: '"no match"', routing_key: 'z.y' }] });
    const [fromDirect] = (await drain(channel, qd2, 1)) as [Delivery];
    const [fromTopic] = (await drain(channel, qt2, 1)) as [Delivery];
    expect(fromDirect.body.toString()).toBe('"py direct"');
    expect(fromDirect.deliveryInfo).toMatchObject({ exchange: direct2, routingKey: 'kd2' });
    expect(fromTopic.body.toString()).toBe('"py topic"');
    expect(await redis.llen(qt2)).toBe(0);
  });

  it('fanout reaches both a Python and a kq subscriber, whoever publishes', async () => {
    await open();
    const fan = name('fan');
    const exchange = new Exchange(fan, { type: 'fanout' });
    await channel.declareQueue(new Queue(name('kqfan'), { exchange }));
    const kqGot: string[] = [];
    const consumer = await channel.consume({ queues: [name('kqfan')], noAck: true, onMessage: (d) => kqGot.push(d.body.toString()) });
    const peer = new KombuPeer({ cmd: 'consume', queues: [{ name: name('pyfan'), exchange: fan, type: 'fanout' }], count: 2, no_ack: true });
    await peer.ready();
    await new Promise((resolve) => setTimeout(resolve, 300)); // let the PSUBSCRIBE reach the server
    await channel.publish(fan, '', outgoing('"from kq"'));
    await python({ cmd: 'publish', exchange: fan, type: 'fanout', messages: [{ body: '"from python"' }] });
    await peer.done();
    await waitFor(() => kqGot.length === 2, 5000, 'kq to receive both');
    await consumer.cancel();
    expect(kqGot.sort()).toEqual(['"from kq"', '"from python"']);
    expect(peer.messages.map((m) => Buffer.from(m.body_b64, 'base64').toString()).sort()).toEqual(['"from kq"', '"from python"']);
  });

  it('serves priorities in the same order as Python does', async () => {
    await open();
    const priorities = [9, 6, 3, 0, 5, 1, 8, 2];
    const queue = name('prio');
    await channel.declareQueue(new Queue(queue));
    for (const priority of priorities) await channel.publish('', queue, outgoing(`"p${priority}"`, { properties: { priority } }));
    const peer = await python({ cmd: 'consume', queues: [{ name: queue }], count: priorities.length });
    const pythonOrder = peer.messages.map((m) => m.priority);

    await python({ cmd: 'publish', messages: priorities.map((priority) => ({ body: `"p${priority}"`, routing_key: queue, properties: { priority } })) });
    const kqOrder: number[] = [];
    for (;;) {
      const delivery = await channel.get(queue);
      if (!delivery) break;
      kqOrder.push(delivery.properties.priority as number);
      await delivery.ack();
    }
    expect(pythonOrder).toEqual([0, 1, 2, 3, 5, 6, 8, 9]);
    expect(kqOrder).toEqual(pythonOrder);
  });

  it("Python's visibility sweep leaves a delivery kq is still working on alone", async () => {
    // Every process of a fleet uses one visibility_timeout (Kombu's rule): kq's lease scores are relative to it.
    await open({ leaseMs: 600, leaseRenewIntervalMs: 150, visibilityTimeout: 1 });
    const queue = name('long');
    await channel.declareQueue(new Queue(queue));
    await channel.publish('', queue, outgoing('"long task"'));
    const delivery = (await channel.get(queue)) as Delivery;
    await new Promise((resolve) => setTimeout(resolve, 2500)); // the task runs 2.5 visibility timeouts
    await python({ cmd: 'sweep', transport_options: { visibility_timeout: 1 } });
    expect(await redis.llen(queue)).toBe(0);
    expect(await redis.hexists('unacked', delivery.deliveryInfo.deliveryTag)).toBe(1);
    await delivery.ack();
  });

  it("Python's visibility sweep leaves alone a delivery held under the default lease when visibility_timeout is shorter than a third of it", async () => {
    // Nothing about the heartbeat configured: kq derives it from the visibility timeout the fleet uses (1 s here).
    await open({ visibilityTimeout: 1 });
    const queue = name('short-visibility');
    await channel.declareQueue(new Queue(queue));
    await channel.publish('', queue, outgoing('"long task"'));
    const delivery = (await channel.get(queue)) as Delivery;
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await python({ cmd: 'sweep', transport_options: { visibility_timeout: 1 } });
    expect(await redis.llen(queue)).toBe(0);
    await delivery.ack();
  });

  it("Python's visibility sweep restores what a dead kq worker held once its lease ran out (not the visibility timeout), and nothing a live one holds", async () => {
    // The lease (500 ms) is far shorter than the visibility timeout (5 s): only the unacked_index score tells Python
    // that the dead worker's lease ran out.
    // Neither kq process sweeps in the time the test takes: only Python's sweep can bring the message back.
    const options = { leaseMs: 500, leaseRenewIntervalMs: 100, visibilityTimeout: 5, sweepIntervalMs: 60_000 };
    await open(options);
    const queue = name('kq-dead');
    await channel.declareQueue(new Queue(queue));
    await channel.publish('', queue, outgoing('"held by the dead"'));
    await channel.publish('', queue, outgoing('"held by the living"'));
    const doomed = makeTransport('', { pollIntervalMs: 200, ...options }, DB);
    const dead = (await (await doomed.createChannel()).get(queue)) as Delivery;
    expect(dead.body.toString()).toBe('"held by the dead"');
    doomed.terminate(); // as SIGKILL leaves it: nothing renewed, nothing given back
    const live = (await channel.get(queue)) as Delivery;
    await new Promise((resolve) => setTimeout(resolve, 1500)); // three leases, well inside one visibility timeout
    await python({ cmd: 'sweep', transport_options: { visibility_timeout: 5 } });
    expect(await redis.lrange(queue, 0, -1)).toHaveLength(1);
    expect(await redis.hexists('unacked', dead.deliveryInfo.deliveryTag)).toBe(0);
    expect(await redis.hexists('unacked', live.deliveryInfo.deliveryTag)).toBe(1);
    const [again] = (await drain(channel, queue, 1)) as [Delivery];
    expect(again.body.toString()).toBe('"held by the dead"');
    expect(again.deliveryInfo.redelivered).toBe(true);
    await live.ack();
    expect(await redis.hexists('unacked', live.deliveryInfo.deliveryTag)).toBe(0);
  });

  it('kq restores what a crashed Python worker held, by Kombu’s visibility rule', async () => {
    await open({ visibilityTimeout: 1 });
    const queue = name('pycrash');
    await channel.declareQueue(new Queue(queue));
    await channel.publish('', queue, outgoing('"held by python"', { properties: { priority: 4 } }));
    const peer = new KombuPeer({ cmd: 'consume', queues: [{ name: queue }], count: 1, abandon: true });
    await peer.done();
    expect(peer.messages).toHaveLength(1);
    expect(await redis.hlen('unacked')).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(await transport.redisStore.sweepVisibility()).toBeGreaterThanOrEqual(1);
    const [delivery] = (await drain(channel, queue, 1)) as [Delivery];
    expect(delivery.body.toString()).toBe('"held by python"');
    expect(delivery.deliveryInfo.redelivered).toBe(true);
    expect(delivery.headers['redelivered']).toBe(true);
  });

  it('kq restores what a crashed Python worker took from topic-bound queues by Kombu’s rules: routed again by exchange and key', async () => {
    await open({ visibilityTimeout: 1 });
    const exchange = name('topic');
    const topic = new Exchange(exchange, { type: 'topic' });
    const anyBelowA = name('a-hash');
    const oneWordBetween = name('a-star-c');
    await channel.declareExchange(topic);
    await channel.declareQueue(new Queue(anyBelowA, { exchange: topic, routingKey: 'a.#' }));
    await channel.declareQueue(new Queue(oneWordBetween, { exchange: topic, routingKey: 'a.*.c' }));
    await channel.publish(exchange, 'a.x', outgoing('"a.x"')); // a.# only
    await channel.publish(exchange, 'a.b.c', outgoing('"a.b.c"')); // both queues
    const peer = new KombuPeer({
      cmd: 'consume',
      queues: [{ name: anyBelowA, exchange, type: 'topic', routing_key: 'a.#' }],
      count: 2,
      prefetch: 2,
      abandon: true,
    });
    await peer.done();
    expect(peer.messages).toHaveLength(2);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(await transport.redisStore.sweepVisibility()).toBeGreaterThanOrEqual(2);
    // Kombu's restore routes each held message through its exchange again (`_lookup`), not to the queue it was read
    // from: a.x matches a.# only; a.b.c matches both patterns, so a.*.c now holds its own copy and the restored one.
    const restored = await drain(channel, anyBelowA, 2);
    expect(restored.map((delivery) => delivery.body.toString()).sort()).toEqual(['"a.b.c"', '"a.x"']);
    expect(restored.every((delivery) => delivery.deliveryInfo.redelivered)).toBe(true);
    const both = await drain(channel, oneWordBetween, 2);
    expect(both.map((delivery) => delivery.body.toString())).toEqual(['"a.b.c"', '"a.b.c"']);
    expect(both.map((delivery) => delivery.deliveryInfo.redelivered).sort()).toEqual([false, true]);
    for (const queue of [anyBelowA, oneWordBetween]) expect((await channel.checkQueue(queue)).messageCount, `left in ${queue}`).toBe(0);
  });
});
