/**
 * A Redis outage (the server killed and started again with its data) under a consumer and a publisher: acks made
 * during it are held and land afterwards — a finished task is not run again — and a publish retried by the policy
 * goes through once Redis is back, as it does on RabbitMQ.
 */
import { Connection, Queue, type Delivery } from '@kq/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisTransport } from '../src/index';
import { PrivateRedis } from './helpers/private-redis';
import { quietLogger, warnings } from './helpers/redis-test-env';

const hasServer = await new Promise<boolean>((resolve) => {
  import('node:child_process').then(({ execFile }) => execFile('redis-server', ['--version'], (error) => resolve(!error)), () => resolve(false));
});
if (!hasServer && process.env['KQ_REQUIRE_BROKERS'] === '1') throw new Error('redis-server is not installed; the outage tests start their own');

const message = (text: string) => ({ body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} });

describe.skipIf(!hasServer)('Redis outage', () => {
  const redis = new PrivateRedis();
  beforeAll(() => redis.start());
  afterAll(() => redis.stop());

  it('holds acks made while Redis is down and sends them once it is back: nothing is redelivered', async () => {
    const leaseMs = 1500;
    const options = { leaseMs, leaseRenewIntervalMs: 300, sweepIntervalMs: 200, logger: quietLogger };
    // maxRetriesPerRequest 1: ioredis fails the ack script after one reconnect attempt, as it does after 20 in a
    // longer outage — the ack must be held by kq, not by ioredis's offline queue.
    const consumer = new RedisTransport(redis.url, { ...options, redisOptions: { maxRetriesPerRequest: 1 } });
    const watcher = new RedisTransport(redis.url, options);
    try {
      const channel = await consumer.createChannel();
      await channel.declareQueue(new Queue('outage.acks'));
      for (let i = 0; i < 5; i++) await channel.publish('', 'outage.acks', message(`m${i}`));
      const held: Delivery[] = [];
      for (let i = 0; i < 5; i++) held.push((await channel.get('outage.acks')) as Delivery);
      await redis.kill();
      const acks = held.map((delivery) => delivery.ack());
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await redis.start();
      await Promise.all(acks);
      // Long enough for any lease left behind to run out and be swept back into the queue.
      const other = await watcher.createChannel();
      await new Promise((resolve) => setTimeout(resolve, leaseMs * 2));
      expect(await other.get('outage.acks')).toBeNull();
      expect(warnings.some((line) => line.includes('holding') && line.includes('ack'))).toBe(true);
    } finally {
      await consumer.close();
      await watcher.close();
    }
  }, 30_000);

  it('a consumer cancelled while Redis is down stops waiting for it', async () => {
    // Its BRPOP sits in ioredis's offline queue, which a disconnect does not fail while reconnecting: the wait is
    // abandoned instead (nothing was sent, so nothing was popped). It used to wait for Redis without end.
    const transport = new RedisTransport(redis.url, { pollIntervalMs: 60_000, logger: quietLogger });
    try {
      const channel = await transport.createChannel();
      await channel.declareQueue(new Queue('outage.idle'));
      const consumer = await channel.consume({ queues: ['outage.idle'], onMessage: () => undefined });
      await new Promise((resolve) => setTimeout(resolve, 300)); // waiting in BRPOP
      await redis.kill();
      await new Promise((resolve) => setTimeout(resolve, 500)); // the wait is now queued for a reconnect
      await consumer.cancel();
    } finally {
      await redis.start();
      await transport.close();
    }
  }, 30_000);

  it('retries a publish through an outage longer than ioredis keeps a command (MaxRetriesPerRequestError)', async () => {
    // maxRetriesPerRequest 1: ioredis gives a queued command up after one reconnect attempt, long before Redis is back.
    const transportOptions = { redisOptions: { maxRetriesPerRequest: 1 }, logger: quietLogger };
    const connection = new Connection(redis.url, {
      transportOptions,
      retryPolicy: { maxRetries: 40, intervalStart: 100, intervalStep: 100, intervalMax: 250 },
    });
    const reader = new RedisTransport(redis.url, { logger: quietLogger });
    try {
      await connection.ensure((channel) => channel.declareQueue(new Queue('outage.publish')));
      await redis.kill();
      const publishing = connection.ensure((channel) => channel.publish('', 'outage.publish', message('through the outage')));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await redis.start();
      await publishing;
      const channel = await reader.createChannel();
      const delivery = (await channel.get('outage.publish')) as Delivery;
      expect(delivery.body.toString()).toBe('through the outage');
      await delivery.ack();
      expect(await channel.get('outage.publish')).toBeNull();
    } finally {
      await connection.close();
      await reader.close();
    }
  }, 30_000);
});
