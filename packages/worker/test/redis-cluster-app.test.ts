import { randomUUID } from 'node:crypto';
import { encodeEnvelope } from '@kq/core';
import type { RedisTransport } from '@kq/redis';
import { startRedisClusterOrSkip } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { App } from '../src/app';
import { chord, group } from '../src/canvas/index';
import { Logger } from '../src/logger';
import { elect, queueIds, tick } from './fixtures/beat/lease-helpers';
// The transport package's beat lease and outbox, imported by path until its index.ts exports them.
import { RedisBeatLease } from '../../redis/src/beat-lease';
import { BeatOutbox } from '../../redis/src/beat-outbox';

// An application whose only Redis is a cluster (as a managed Redis in cluster mode is): tasks on its queues, results
// and the chord join in its result backend, and beat's lease, on a 3-master cluster of this file's own. (Beat's
// failover across a SIGKILL on a cluster is in beat-failover.test.ts.)
const cluster = await startRedisClusterOrSkip();

afterAll(async () => {
  await cluster?.destroy();
});

const quiet = (): Logger => new Logger('test', { level: 'error', sink: () => undefined });

describe.skipIf(!cluster)('an app on Redis Cluster, broker and result backend', () => {
  it('gets a task’s result, a group’s results and a chord’s callback', async () => {
    const app = new App('cluster-results', { broker: cluster!.url, backend: cluster!.url });
    const add = app.task('cr.add', (_ctx, x: number, y: number) => x + y);
    const total = app.task('cr.total', (_ctx, values: number[]) => values.reduce((sum, value) => sum + value, 0));
    const worker = app.worker({ hostname: 'cluster-results@test', concurrency: 4, logger: quiet() });
    await worker.start();
    try {
      expect(await (await add.delay(2, 3)).get({ timeout: 10_000 })).toBe(5);
      const parts = await group(Array.from({ length: 6 }, (_, index) => add.s(index, index))).delay();
      expect(await parts.get({ timeout: 10_000 })).toEqual([0, 2, 4, 6, 8, 10]);
      const joined = await chord(Array.from({ length: 5 }, (_, index) => add.s(index, 1)), total.s()).delay();
      expect(await joined.get({ timeout: 10_000 })).toBe(15);
    } finally {
      await worker.stop();
      await app.close();
    }
  });
});

describe.skipIf(!cluster)('the Redis beat lease on a cluster', () => {
  it('keeps its keys in one slot, fences off a stale leader, and a new leader first sends what a dead one left', async () => {
    const beatGroup = `cluster-beat-${randomUUID()}`;
    const queue = `${beatGroup}.q`;
    const apps = [new App('a', { broker: cluster!.url }), new App('b', { broker: cluster!.url }), new App('c', { broker: cluster!.url })];
    const transports = (await Promise.all(apps.map(async (app) => (await app.connection.connect(), app.connection.transport())))) as RedisTransport[];
    // A renews rarely: it stands for a process that paused past its lease.
    const a = new RedisBeatLease(transports[0]!, { group: beatGroup, leaseMs: 30_000, renewIntervalMs: 20_000 });
    const b = new RedisBeatLease(transports[1]!, { group: beatGroup, leaseMs: 2000, renewIntervalMs: 100 });
    const c = new RedisBeatLease(transports[2]!, { group: beatGroup, leaseMs: 2000, renewIntervalMs: 100 });
    const redis = transports[0]!.redisStore.commands;
    try {
      const { lease, epoch, state, outbox } = a.keys;
      for (const key of [epoch, state, outbox]) expect(key).toContain(`{kq.beat.${beatGroup}}`);
      expect(lease).toContain(`{kq.beat.${beatGroup}}`);

      const leaderA = await elect(a);
      expect(await leaderA.commit(tick(apps[0]!, queue, 'e', 1000))).toBe('committed');
      expect(await redis.hlen(outbox!)).toBe(0); // sent, and its record cleared
      await redis.del(lease); // A's lease expires while it is paused
      const leaderB = await elect(b);
      expect(leaderB.epoch).toBeGreaterThan(leaderA.epoch);
      expect(leaderB.lastTicks.get('e')).toBe(1000);
      expect(await leaderA.commit(tick(apps[0]!, queue, 'e', 2000))).toBe('fenced');
      expect(await leaderB.commit(tick(apps[1]!, queue, 'e', 2000))).toBe('committed');
      expect(await leaderB.commit(tick(apps[1]!, queue, 'e', 2000))).toBe('stale');
      expect(await queueIds(apps[0]!, queue)).toEqual(['e-1000', 'e-2000']);

      // B commits tick 3000 and dies before sending it: its record is all that is left of the message.
      const orphan = tick(apps[1]!, queue, 'e', 3000);
      const envelope = encodeEnvelope({ ...orphan.publish!.message, exchange: '', routingKey: queue, deliveryTag: randomUUID(), redelivered: false });
      const listKey = transports[1]!.layout.listKey(queue, 0);
      await redis.hset(state, 'e', '3000');
      await redis.hset(outbox!, BeatOutbox.field('e', 3000), BeatOutbox.encode({ pushes: [[listKey, envelope]], broadcasts: [] }));
      await redis.hset(outbox!, BeatOutbox.field('junk', 1), 'not json'); // never written by kq: dropped, not fatal
      await b.stop();
      const leaderC = await elect(c);
      expect(leaderC.lastTicks.get('e')).toBe(3000);
      expect(await queueIds(apps[0]!, queue)).toEqual(['e-3000']);
      expect(await redis.hlen(outbox!)).toBe(0);
    } finally {
      await Promise.all([a.stop(), b.stop(), c.stop()]);
      await Promise.all(apps.map((app) => app.close()));
    }
  });
});
