import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Exchange, Queue, type Delivery, type OutgoingMessage } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisTransport } from '../src/index';
import { cleanup, killConnections, makeTransport, quietLogger, rawClient, uniquePrefix, waitFor } from './helpers/redis-test-env';

const up = await brokerReachable('redis');
const REDIS_SERVER = '/usr/bin/redis-server';
const canRunServer = spawnSync(REDIS_SERVER, ['--version']).status === 0;

function message(text: string): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

describe.skipIf(!up)('reconnect after CLIENT KILL', () => {
  const prefix = uniquePrefix('reconnect');
  let redis: Redis;
  const transports: RedisTransport[] = [];

  beforeAll(() => {
    redis = rawClient();
  });
  afterEach(async () => {
    await Promise.all(transports.splice(0).map((transport) => transport.close()));
  });
  afterAll(async () => {
    await cleanup(redis, prefix);
    redis.disconnect();
  });

  function transport(options: Parameters<typeof makeTransport>[1] = {}): RedisTransport {
    const made = makeTransport(prefix, { pollIntervalMs: 300, ...options });
    made.on('error', () => undefined); // connection errors are expected here
    transports.push(made);
    return made;
  }

  it('names its connections and keeps consuming after all of them are killed', async () => {
    const consumerSide = transport();
    const publisherSide = transport();
    const channel = await consumerSide.createChannel();
    const publisher = await publisherSide.createChannel();
    await channel.declareQueue(new Queue('rk'));
    const got: string[] = [];
    const consumer = await channel.consume({ queues: ['rk'], prefetch: 5, onMessage: (d) => void d.ack().then(() => got.push(d.body.toString())) });
    await publisher.publish('', 'rk', message('before'));
    await waitFor(() => got.length === 1);
    // cmd, sub and at least one block-N connection, all named.
    const names = ((await redis.client('LIST')) as string).split('\n').map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? '');
    const ours = names.filter((name) => name.startsWith(consumerSide.clientNamePrefix));
    expect(ours.some((name) => name.endsWith('.cmd'))).toBe(true);
    expect(ours.some((name) => name.endsWith('.sub'))).toBe(true);
    expect(ours.some((name) => /\.block-\d+$/.test(name))).toBe(true);

    expect(await killConnections(redis, consumerSide.clientNamePrefix)).toBeGreaterThanOrEqual(3);
    await publisher.publish('', 'rk', message('after'));
    await waitFor(() => got.length === 2, 10_000, 'the message published after the kill');
    expect(got).toEqual(['before', 'after']);
    await consumer.cancel();
  });

  it('loses nothing while connections are killed repeatedly under load', async () => {
    const consumerSide = transport({ leaseMs: 1000, sweepIntervalMs: 200, batchSize: 16 });
    const publisherSide = transport();
    const channel = await consumerSide.createChannel();
    const publisher = await publisherSide.createChannel();
    await channel.declareQueue(new Queue('load'));
    // At least once: every message is delivered, and in the end Redis holds none of them (queued, unacked or in an
    // in-flight list). Counted on delivery, not on the ack's answer: an ack sent again after a kill may find its
    // first send applied and be answered as stale, and a delivery whose claim was lost comes back to be counted.
    const seen = new Set<string>();
    const consumer = await channel.consume({
      queues: ['load'],
      prefetch: 20,
      onMessage: (delivery) => {
        seen.add(delivery.body.toString());
        void delivery.ack().catch(() => undefined);
      },
    });
    const total = 400;
    let killed = 0;
    for (let n = 0; n < total; n++) {
      await publisher.publish('', 'load', message(`m${n}`));
      if (n % 100 === 50) killed += await killConnections(redis, consumerSide.clientNamePrefix);
    }
    expect(killed).toBeGreaterThan(0);
    await waitFor(() => seen.size === total, 20_000, `all ${total} messages`).catch((error: unknown) => {
      const missing = Array.from({ length: total }, (_, n) => `m${n}`).filter((body) => !seen.has(body));
      throw new Error(`${String(error)}: ${missing.length} never delivered (${missing.slice(0, 10).join(', ')})`);
    });
    await waitFor(
      async () =>
        (await redis.llen(`${prefix}load`)) === 0 && (await redis.hlen(`${prefix}unacked`)) === 0 && (await redis.keys(`${prefix}_kq.inflight.*`)).length === 0,
      20_000,
      'nothing left queued, unacked or in flight',
    );
    await consumer.cancel();
  });

  it('fanout subscriptions and the delayed promoter come back after the kill', async () => {
    const side = transport();
    const channel = await side.createChannel();
    await channel.declareQueue(new Queue('rk.fan', { exchange: new Exchange('rk.fanx', { type: 'fanout' }) }));
    await channel.declareQueue(new Queue('rk.delayed'));
    const fanned: string[] = [];
    const delayed: string[] = [];
    const c1 = await channel.consume({ queues: ['rk.fan'], noAck: true, onMessage: (d) => fanned.push(d.body.toString()) });
    const c2 = await channel.consume({ queues: ['rk.delayed'], onMessage: (d) => void d.ack().then(() => delayed.push(d.body.toString())) });
    await killConnections(redis, side.clientNamePrefix);
    // PUB/SUB is lossy: publish until the re-subscribed connection hears one.
    await waitFor(async () => {
      await redis.publish(`${prefix}/0.rk.fanx`, JSON.stringify({ body: 'Zg==', properties: { delivery_tag: 'f', body_encoding: 'base64' } }));
      return fanned.length > 0;
    }, 10_000, 'a fanout message after the kill');
    expect(fanned[0]).toBe('f');
    await channel.publish('', 'rk.delayed', message('later'), { delay: 300 });
    await waitFor(() => delayed.length === 1, 10_000, 'the delayed message');
    await c1.cancel();
    await c2.cancel();
  });
});

describe.skipIf(!up || !canRunServer)('reconnect after a Redis restart', () => {
  let dir: string;
  let port: number;
  let server: ChildProcess | undefined;

  async function freePort(): Promise<number> {
    return new Promise((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address() as { port: number };
        probe.close(() => resolve(address.port));
      });
    });
  }

  async function startServer(): Promise<void> {
    server = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''], {
      stdio: 'ignore',
    });
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 50 });
    probe.on('error', () => undefined);
    await waitFor(async () => probe.ping().then(() => true, () => false), 10_000, 'redis-server to start');
    probe.disconnect();
  }

  async function stopServer(): Promise<void> {
    const running = server;
    server = undefined;
    if (!running) return;
    const exited = new Promise((resolve) => running.on('exit', resolve));
    running.kill('SIGTERM');
    await exited;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kq-redis-restart-'));
    port = await freePort();
    await startServer();
  });
  afterAll(async () => {
    await stopServer();
    rmSync(dir, { recursive: true, force: true });
  });

  it('resumes consuming, without losing a published message, once Redis is back', async () => {
    const url = `redis://127.0.0.1:${port}/0`;
    const consumerSide = new RedisTransport(url, { pollIntervalMs: 300, logger: quietLogger });
    consumerSide.on('error', () => undefined);
    const disconnected: string[] = [];
    consumerSide.on('disconnected', () => disconnected.push('down'));
    const channel = await consumerSide.createChannel();
    await channel.declareQueue(new Queue('restart'));
    const got: Delivery[] = [];
    const consumer = await channel.consume({ queues: ['restart'], prefetch: 4, onMessage: (d) => void d.ack().then(() => got.push(d)) });
    await channel.publish('', 'restart', message('before restart'));
    await waitFor(() => got.length === 1);

    await stopServer();
    await waitFor(() => disconnected.length > 0, 5000, 'the disconnect to be noticed');
    await startServer();
    // Lua scripts are gone from the restarted server: EVALSHA falls back to EVAL.
    const publisher = new Redis({ port, host: '127.0.0.1' });
    const { encodeEnvelope } = await import('@kq/core');
    await publisher.lpush(
      'restart',
      encodeEnvelope({ body: Buffer.from('after restart'), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {}, exchange: '', routingKey: 'restart', deliveryTag: 'restart-tag', redelivered: false }),
    );
    await waitFor(() => got.length === 2, 15_000, 'the message published after the restart');
    expect(got.map((d) => d.body.toString())).toEqual(['before restart', 'after restart']);
    await waitFor(async () => (await publisher.hlen('unacked')) === 0, 5000, 'the ack after the restart');
    publisher.disconnect();
    await consumer.cancel();
    await consumerSide.close();
  });
});
