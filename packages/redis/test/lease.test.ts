import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Queue, StaleDeliveryError, type Delivery, type OutgoingMessage } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';
import type { RedisClaim } from '../src/index';
import { ACK } from '../src/lua-scripts';
import { redisUrl, useRedisFixture, waitFor } from './helpers/redis-test-env';
import { monitorFeed } from './helpers/monitor-feed';

const up = await brokerReachable('redis');
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const HOLDER = fileURLToPath(new URL('./fixtures/hold-delivery.ts', import.meta.url));

function message(text: string): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!up)('leases', () => {
  const fixture = useRedisFixture('lease', { pollIntervalMs: 200 });
  const { prefix, children, transport } = fixture;

  it('a delivery a live consumer holds past the visibility timeout is not redelivered, and its ack goes through', async () => {
    const holder = transport({ leaseMs: 900, leaseRenewIntervalMs: 250, visibilityTimeout: 1 });
    const sweeper = transport({ leaseMs: 900, visibilityTimeout: 1 });
    const channel = await holder.createChannel();
    await channel.declareQueue(new Queue('long'));
    await channel.publish('', 'long', message('slow task'));
    const delivery = (await channel.get('long')) as Delivery;
    const tag = delivery.deliveryInfo.deliveryTag;
    const firstScore = Number(await fixture.redis.zscore(`${prefix}unacked_index`, tag));
    await sweeper.connect();
    // Three visibility timeouts and three leases long, sweeping all the while.
    const until = Date.now() + 3000;
    while (Date.now() < until) {
      await sweeper.redisStore.sweepLeases();
      await sweeper.redisStore.sweepVisibility();
      expect(await fixture.redis.llen(`${prefix}long`)).toBe(0);
      await sleep(150);
    }
    expect(Number(await fixture.redis.zscore(`${prefix}unacked_index`, tag))).toBeGreaterThan(firstScore);
    expect(await fixture.redis.hexists(`${prefix}unacked`, tag)).toBe(1);
    await delivery.ack();
    expect(await fixture.redis.hexists(`${prefix}unacked`, tag)).toBe(0);
    expect(sweeper.stats()).toMatchObject({ leaseRestored: 0, visibilityRestored: 0 });
  });

  it('a consumer killed with SIGKILL has its delivery redelivered once the lease runs out', async () => {
    const survivor = transport({ leaseMs: 2000, sweepIntervalMs: 200 });
    const channel = await survivor.createChannel();
    await channel.declareQueue(new Queue('crash'));
    await channel.publish('', 'crash', message('survives a crash'));
    // node itself (not the tsx wrapper, whose SIGKILL would orphan the real process) with tsx as a loader.
    const child = spawn(process.execPath, ['--import', 'tsx', HOLDER, redisUrl(), prefix, 'crash', '2000'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
    await waitFor(() => lines.length >= 2, 20_000, 'the child to take the delivery');
    const held = JSON.parse(lines.find((line) => line.startsWith('{')) as string) as { tag: string; body: string };
    expect(held.body).toBe('survives a crash');
    expect(await fixture.redis.hexists(`${prefix}unacked`, held.tag)).toBe(1);
    child.kill('SIGKILL');

    const redelivered: Delivery[] = [];
    const consumer = await channel.consume({ queues: ['crash'], prefetch: 1, onMessage: (d) => redelivered.push(d) });
    await waitFor(() => redelivered.length === 1, 10_000, 'the redelivery');
    const [delivery] = redelivered as [Delivery];
    expect(delivery.body.toString()).toBe('survives a crash');
    expect(delivery.deliveryInfo).toMatchObject({ deliveryTag: held.tag, redelivered: true });
    await delivery.ack();
    await consumer.cancel();
  });

  it('refuses a stale ack with StaleDeliveryError once the lease was taken back and re-claimed', async () => {
    // The heartbeat comes far too late for the lease: the delivery is taken back while the handler "works".
    const stalled = transport({ leaseMs: 300, leaseRenewIntervalMs: 60_000, sweepIntervalMs: 60_000 });
    const other = transport({ leaseMs: 5000 });
    const stalledChannel = await stalled.createChannel();
    const otherChannel = await other.createChannel();
    await stalledChannel.declareQueue(new Queue('fence'));
    await stalledChannel.publish('', 'fence', message('only once'));
    const first = (await stalledChannel.get('fence')) as Delivery;
    await sleep(400);
    expect(await other.redisStore.sweepLeases()).toBe(1);
    const second = (await otherChannel.get('fence')) as Delivery;
    expect(second.deliveryInfo).toMatchObject({ deliveryTag: first.deliveryInfo.deliveryTag, redelivered: true });
    // The next heartbeat finds the lease taken: the delivery says it is stale, so a worker would not start it.
    expect(first.stale).toBe(false);
    await stalled.redisStore.renewLeases();
    expect(first.stale).toBe(true);
    await expect(first.ack()).rejects.toBeInstanceOf(StaleDeliveryError);
    // The refused ack did not touch the new holder's claim.
    expect(await fixture.redis.hexists(`${prefix}unacked`, second.deliveryInfo.deliveryTag)).toBe(1);
    await second.ack();
    expect(await fixture.redis.hexists(`${prefix}unacked`, second.deliveryInfo.deliveryTag)).toBe(0);
    expect(stalled.stats().held).toBe(0);
  });

  it('a requeue or restore of a delivery a sweep took back adds no second copy; once a heartbeat saw it taken, it is refused', async () => {
    const stalled = transport({ leaseMs: 300, leaseRenewIntervalMs: 60_000, sweepIntervalMs: 60_000 });
    const other = transport();
    const channel = await stalled.createChannel();
    await channel.declareQueue(new Queue('fence2'));
    await channel.publish('', 'fence2', message('a'));
    await channel.publish('', 'fence2', message('b'));
    const a = (await channel.get('fence2')) as Delivery;
    const b = (await channel.get('fence2')) as Delivery;
    await sleep(400);
    await other.connect();
    expect(await other.redisStore.sweepLeases()).toBe(2);
    // Its tag is gone from unacked: nothing to give back (the same answer an ioredis re-send of a settle gets).
    await a.requeue();
    expect(await fixture.redis.llen(`${prefix}fence2`)).toBe(2);
    // A heartbeat finds b taken: from then on its settles are refused without reaching Redis.
    await stalled.redisStore.renewLeases();
    expect(b.stale).toBe(true);
    const errors: Error[] = [];
    channel.on('error', (error) => errors.push(error));
    await channel.close(); // tries to restore b: stale, reported, not applied twice
    expect(errors.map((error) => error.constructor.name)).toEqual(['StaleDeliveryError']);
    expect(b.acknowledged).toBe(false);
    expect(await fixture.redis.llen(`${prefix}fence2`)).toBe(2);
  });

  it('settles are idempotent without a stored reply: the same ack twice is done, then a no-op, and the store takes both as done', async () => {
    const kq = transport({ leaseMs: 60_000 });
    const channel = await kq.createChannel();
    await channel.declareQueue(new Queue('resend'));
    await channel.publish('', 'resend', message('once'));
    const [claim] = (await kq.redisStore.claim(['resend'], { max: 1, blockMs: 0, noAck: false })) as [RedisClaim];
    const keys = [`${prefix}unacked`, `${prefix}unacked_index`];
    // The same command twice, as ioredis re-sends one whose reply the dropped connection lost.
    expect(await ACK.run(fixture.redis, keys, [claim.tag, claim.score])).toEqual([1]);
    expect(await ACK.run(fixture.redis, keys, [claim.tag, claim.score])).toEqual([0]);
    expect(await fixture.redis.hexists(`${prefix}unacked`, claim.tag)).toBe(0);
    await kq.redisStore.ack(claim);
    expect(await fixture.redis.keys(`${prefix}_kq.request*`)).toEqual([]);
  });

  it('notices a Python worker that restored and re-claimed the message meanwhile', async () => {
    const kq = transport({ leaseMs: 60_000 });
    const channel = await kq.createChannel();
    await channel.declareQueue(new Queue('py'));
    await channel.publish('', 'py', message('shared'));
    const delivery = (await channel.get('py')) as Delivery;
    const tag = delivery.deliveryInfo.deliveryTag;
    // What Kombu's restore_by_tag followed by a Python claim does to the keys (it knows nothing of kq's records).
    const value = (await fixture.redis.hget(`${prefix}unacked`, tag)) as string;
    await fixture.redis.multi().zrem(`${prefix}unacked_index`, tag).hdel(`${prefix}unacked`, tag).exec();
    await fixture.redis.multi().zadd(`${prefix}unacked_index`, Date.now() / 1000 + 5, tag).hset(`${prefix}unacked`, tag, value).exec();
    await expect(delivery.ack()).rejects.toBeInstanceOf(StaleDeliveryError);
    expect(await fixture.redis.hget(`${prefix}unacked`, tag)).toBe(value);
    await fixture.redis.multi().zrem(`${prefix}unacked_index`, tag).hdel(`${prefix}unacked`, tag).exec();
  });

  it('restores a delivery only Python held once it is older than the visibility timeout (Kombu’s rule)', async () => {
    const kq = transport({ visibilityTimeout: 1 });
    await kq.connect();
    const envelope = JSON.stringify({
      body: Buffer.from('py').toString('base64'),
      'content-encoding': 'utf-8',
      'content-type': 'text/plain',
      headers: {},
      properties: { delivery_info: { exchange: '', routing_key: 'pyheld' }, priority: 4, body_encoding: 'base64', delivery_tag: 'py-tag-1' },
    });
    await fixture.redis
      .multi()
      .zadd(`${prefix}unacked_index`, Date.now() / 1000 - 5, 'py-tag-1')
      .hset(`${prefix}unacked`, 'py-tag-1', `[${envelope}, "", "pyheld"]`)
      .exec();
    // kq never takes Kombu's mutex (each restore is one atomic step), so a kq process killed between the sweep's two
    // calls cannot leave it held for unacked_mutex_expire and stop every sweep, Python's too.
    const mutexWrites: string[] = [];
    const monitored = await monitorFeed(fixture.redis);
    monitored.on('monitor', (_time, args) => {
      if (String(args[0]).toLowerCase() === 'set' && args[1] === `${prefix}unacked_mutex`) mutexWrites.push(args.join(' '));
      if (args[1] === `${prefix}marker`) mutexWrites.push('marker');
    });
    expect(await kq.redisStore.sweepVisibility()).toBe(1);
    await fixture.redis.echo(`${prefix}marker`);
    await waitFor(() => mutexWrites.includes('marker'), 5000, 'the monitor to catch up');
    monitored.disconnect();
    expect(mutexWrites).toEqual(['marker']);
    expect(await fixture.redis.exists(`${prefix}unacked_mutex`)).toBe(0);
    const restored = JSON.parse((await fixture.redis.lindex(`${prefix}pyheld\x06\x163`, 0)) as string) as {
      headers: Record<string, unknown>;
      properties: { delivery_info: Record<string, unknown> };
    };
    expect(restored.headers['redelivered']).toBe(true);
    expect(restored.properties.delivery_info['redelivered']).toBe(true);
    // Another process holding the mutex makes the sweep stand aside, as in Kombu.
    await fixture.redis.set(`${prefix}unacked_mutex`, 'someone-else', 'PX', 5000);
    expect(await kq.redisStore.sweepVisibility()).toBe(0);
    await fixture.redis.del(`${prefix}unacked_mutex`);
  });
});
