// kq beat's lease on Redis Cluster: the BeatLease contract (the shared suite), and what only the cluster layout does
// (one slot for its keys, the outbox a dead leader leaves). A 3-master cluster of this file's own.
import { randomUUID } from 'node:crypto';
import { encodeEnvelope, Exchange, Queue, type BeatLeadership, type Channel, type TickCommit } from '@kq/core';
import { defineBeatLeaseSuite, startRedisClusterOrSkip, testMessage } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { BeatOutbox } from '../src/beat-outbox';
import type { RedisBeatLease, RedisTransport } from '../src/index';
import { clusterPrefix, makeClusterTransport } from './helpers/cluster-test-env';

const cluster = await startRedisClusterOrSkip();
const prefix = clusterPrefix('cluster-beat-lease');

afterAll(async () => {
  await cluster?.destroy();
});

const create = (): RedisTransport => makeClusterTransport(cluster!, prefix);

defineBeatLeaseSuite({
  name: 'redis cluster',
  create,
  skip: !cluster && 'no private Redis Cluster',
  loseLeadership: async (lease, transport) => {
    await (transport as RedisTransport).redisStore.commands.del((lease as RedisBeatLease).keys.lease);
  },
});

function elect(lease: RedisBeatLease): Promise<BeatLeadership> {
  return new Promise((resolve, reject) => {
    lease.start({ elected: resolve, deposed: () => undefined, error: () => undefined }).catch(reject);
  });
}

function tick(queue: string, entry: string, at: number): TickCommit {
  return { entry, tick: at, publish: { exchange: queue, routingKey: queue, message: testMessage(`${entry}-${at}`, { headers: { id: `${entry}-${at}` } }) } };
}

async function queueIds(channel: Channel, queue: string): Promise<string[]> {
  const ids: string[] = [];
  for (let delivery = await channel.get(queue, { noAck: true }); delivery; delivery = await channel.get(queue, { noAck: true })) ids.push(String(delivery.headers['id']));
  return ids;
}

describe.skipIf(!cluster)('the Redis beat lease on a cluster', () => {
  it('keeps its keys in one slot, and a new leader first sends what a dead one left', async () => {
    const group = `cluster-beat-${randomUUID()}`;
    const queue = `${group}.q`;
    const transports = [create(), create()];
    await Promise.all(transports.map((transport) => transport.connect()));
    const b = transports[0]!.beatLease({ group, leaseMs: 2000, renewIntervalMs: 100 });
    const c = transports[1]!.beatLease({ group, leaseMs: 2000, renewIntervalMs: 100 });
    const redis = transports[0]!.redisStore.commands;
    const channel = await transports[0]!.createChannel();
    try {
      await channel.declareQueue(new Queue(queue, { exchange: new Exchange(queue, { type: 'direct' }), routingKey: queue, durable: false }));
      const { lease, epoch, state, outbox } = b.keys;
      for (const key of [lease, epoch, state, outbox]) expect(key).toContain(`{kq.beat.${group}}`);

      const leaderB = await elect(b);
      expect(await leaderB.commit(tick(queue, 'e', 1000))).toBe('committed');
      expect(await redis.hlen(outbox!)).toBe(0); // sent, and its record cleared
      expect(await queueIds(channel, queue)).toEqual(['e-1000']);

      // B commits tick 3000 and dies before sending it: its record is all that is left of the message.
      const orphan = tick(queue, 'e', 3000);
      const envelope = encodeEnvelope({ ...orphan.publish!.message, exchange: queue, routingKey: queue, deliveryTag: randomUUID(), redelivered: false });
      const listKey = transports[0]!.layout.listKey(queue, 0);
      await redis.hset(state, 'e', '3000');
      await redis.hset(outbox!, BeatOutbox.field('e', 3000), BeatOutbox.encode({ pushes: [[listKey, envelope]], broadcasts: [] }));
      await redis.hset(outbox!, BeatOutbox.field('junk', 1), 'not json'); // never written by kq: dropped, not fatal
      await b.stop();
      const leaderC = await elect(c);
      expect(leaderC.lastTicks.get('e')).toBe(3000);
      expect(await queueIds(channel, queue)).toEqual(['e-3000']);
      expect(await redis.hlen(outbox!)).toBe(0);
    } finally {
      await Promise.all([b.stop(), c.stop()]);
      await channel.deleteQueue(queue).catch(() => undefined);
      await Promise.all(transports.map((transport) => transport.close().catch(() => undefined)));
    }
  });
});
