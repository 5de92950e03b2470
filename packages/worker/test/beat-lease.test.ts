import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AmqpTransport } from '@kq/amqp';
import type { RedisTransport } from '@kq/redis';
import { brokerReachable, brokerUrls, waitFor } from '@kq/test-harness';
import { App } from '../src/app';
import type { BeatLeadership } from '../src/beat/index';
import { elect, queueIds, tick } from './fixtures/beat/lease-helpers';
// The transport packages' beat leases, imported by path until their index.ts export them.
import { RedisBeatLease } from '../../redis/src/beat-lease';
import { AmqpBeatLease } from '../../amqp/src/single-active-consumer-lease';

const redisUrl = `${brokerUrls.redis.replace(/\/\d*$/, '')}/0`;
const redisUp = await brokerReachable('redis');
const amqpUp = await brokerReachable('amqp');

describe.skipIf(!redisUp)('the Redis beat lease', () => {
  it('fences off a leader whose lease ran out: its commit publishes nothing; state survives leaders', async () => {
    const group = `beat-lease-${randomUUID()}`;
    const queue = `${group}.q`;
    const apps = [new App('a', { broker: redisUrl }), new App('b', { broker: redisUrl }), new App('c', { broker: redisUrl })];
    const transports = (await Promise.all(apps.map(async (app) => (await app.connection.connect(), app.connection.transport())))) as RedisTransport[];
    // A renews rarely: it stands for a process that paused (GC, SIGSTOP) past its lease.
    const a = new RedisBeatLease(transports[0]!, { group, leaseMs: 30_000, renewIntervalMs: 20_000 });
    const b = new RedisBeatLease(transports[1]!, { group, leaseMs: 2000, renewIntervalMs: 100 });
    const c = new RedisBeatLease(transports[2]!, { group, leaseMs: 2000, renewIntervalMs: 100 });
    const redis = transports[0]!.redisStore.commands;
    try {
      const leaderA = await elect(a);
      expect(await leaderA.commit(tick(apps[0]!, queue, 'e', 1000))).toBe('committed');
      await redis.del(a.keys.lease); // A's lease expires while it is paused
      const leaderB = await elect(b);
      expect(leaderB.epoch).toBeGreaterThan(leaderA.epoch);
      expect(leaderB.lastTicks.get('e')).toBe(1000);
      // A wakes up and tries to send: refused by Redis, nothing published.
      expect(await leaderA.commit(tick(apps[0]!, queue, 'e', 2000))).toBe('fenced');
      expect(leaderA.signal.aborted).toBe(true);
      expect(await leaderB.commit(tick(apps[1]!, queue, 'e', 2000))).toBe('committed');
      expect(await leaderB.commit(tick(apps[1]!, queue, 'e', 2000))).toBe('stale');
      expect(await leaderB.commit(tick(apps[1]!, queue, 'e', 1500))).toBe('stale');
      expect(await queueIds(apps[0]!, queue)).toEqual(['e-1000', 'e-2000']);
      // A graceful stop releases the lease at once; the next leader resumes from the recorded state.
      await b.stop();
      expect(leaderB.signal.aborted).toBe(true);
      const leaderC = await elect(c);
      expect(leaderC.epoch).toBeGreaterThan(leaderB.epoch);
      expect(leaderC.lastTicks.get('e')).toBe(2000);
    } finally {
      await Promise.all([a.stop(), b.stop(), c.stop()]);
      await redis.del(a.keys.lease, a.keys.epoch, a.keys.state, queue);
      await Promise.all(apps.map((app) => app.close()));
    }
  });
});

describe.skipIf(!amqpUp)('the RabbitMQ beat lease', () => {
  it('the active consumer leads; on its crash the next one takes over with the committed state', async () => {
    const group = `beat-lease-${randomUUID()}`;
    const queue = `${group}.q`;
    const apps = [new App('a', { broker: brokerUrls.amqp }), new App('b', { broker: brokerUrls.amqp })];
    const transports = (await Promise.all(apps.map(async (app) => (await app.connection.connect(), app.connection.transport())))) as AmqpTransport[];
    const a = new AmqpBeatLease(transports[0]!, { group, settleMs: 100 });
    const b = new AmqpBeatLease(transports[1]!, { group, settleMs: 100 });
    const channel = await apps[1]!.connection.channel();
    try {
      await channel.declareQueue(apps[1]!.router.queue(queue));
      const deposedA: Error[] = [];
      const leaderA = await elect(a, deposedA);
      let leaderB: BeatLeadership | undefined;
      const electedB = elect(b).then((leadership) => (leaderB = leadership));
      expect(await leaderA.commit(tick(apps[0]!, queue, 'e', 1000))).toBe('committed');
      expect(await leaderA.commit(tick(apps[0]!, queue, 'e', 1000))).toBe('stale');
      expect(await leaderA.commit(tick(apps[0]!, queue, 'f', 5000))).toBe('committed');
      expect(leaderB).toBeUndefined(); // B waits in line: RabbitMQ gives it nothing while A is active
      transports[0]!.terminate(); // A crashes
      await electedB;
      expect(leaderB!.epoch).toBeGreaterThan(leaderA.epoch);
      expect(Object.fromEntries(leaderB!.lastTicks)).toEqual({ e: 1000, f: 5000 });
      expect(await leaderB!.commit(tick(apps[1]!, queue, 'e', 2000))).toBe('committed');
      expect(await leaderA.commit(tick(apps[0]!, queue, 'e', 3000))).toBe('fenced');
      expect(await queueIds(apps[1]!, queue)).toEqual(['e-1000', 'f-5000', 'e-2000']);
      await b.stop();
      await waitFor(() => leaderB!.signal.aborted, 1000, 'B to give up its leadership');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await channel.deleteQueue(queue);
      await channel.deleteQueue(b.queue);
      await Promise.all(apps.map((app) => app.close().catch(() => undefined)));
    }
  });

  it('declares its queue classic on one broker and quorum on a cluster URL, and says what to do when they clash', async () => {
    const group = `beat-lease-${randomUUID()}`;
    const apps = [new App('one', { broker: brokerUrls.amqp }), new App('cluster', { broker: `${brokerUrls.amqp};${brokerUrls.amqp}` })];
    const transports = (await Promise.all(apps.map(async (app) => (await app.connection.connect(), app.connection.transport())))) as AmqpTransport[];
    const single = new AmqpBeatLease(transports[0]!, { group, settleMs: 100 });
    const clustered = new AmqpBeatLease(transports[1]!, { group, settleMs: 100 });
    const errors: Error[] = [];
    try {
      expect([single.queueType, clustered.queueType]).toEqual(['classic', 'quorum']);
      await elect(single);
      // The same group's queue exists as a classic queue: the cluster-configured beat is told how to move on.
      await expect(clustered.start({ elected: () => undefined, deposed: () => undefined, error: (error) => errors.push(error) })).rejects.toThrow(
        /exists as a classic queue.*rabbitmqctl delete_queue kq\.beat\..*queueType: 'classic'/,
      );
    } finally {
      await Promise.all([single.stop(), clustered.stop()]);
      const channel = await apps[0]!.connection.channel();
      await channel.deleteQueue(single.queue).catch(() => undefined);
      await Promise.all(apps.map((app) => app.close().catch(() => undefined)));
    }
  });
});
