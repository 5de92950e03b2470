import { Exchange, Queue, type Delivery } from '@kq/core';
import { startRedisClusterOrSkip } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { keySlot } from '../src/cluster-slot';
import type { RedisTransport } from '../src/index';
import { clusterPrefix, makeClusterTransport, rawCluster } from './helpers/cluster-test-env';
import { waitFor } from './helpers/redis-test-env';

// The short Redis Cluster check `pnpm test` runs (the full conformance and fault suites on a cluster are `pnpm
// test:clusters` and `pnpm faults --broker redis-cluster`): a 3-master cluster of this file's own, queues on all
// three shards, one consumer over them, a crash, a delayed message, a fanout.
const cluster = await startRedisClusterOrSkip();
const prefix = clusterPrefix('cluster-smoke');
const raw = cluster ? rawCluster(cluster) : undefined;
const transports: RedisTransport[] = [];

afterAll(async () => {
  await Promise.all(transports.map((transport) => transport.close().catch(() => undefined)));
  raw?.disconnect();
  await cluster?.destroy();
});

function message(text: string): { body: Buffer; contentType: string; contentEncoding: string; headers: Record<string, unknown>; properties: Record<string, unknown> } {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

describe.skipIf(!cluster)('redis cluster smoke', () => {
  const transport = (options = {}): RedisTransport => {
    const made = makeClusterTransport(cluster!, prefix, { pollIntervalMs: 250, ...options });
    transports.push(made);
    return made;
  };

  /** One queue on each master: names whose {queue} slot each master serves. */
  async function queueOnEachShard(): Promise<string[]> {
    const byPort = new Map<number, string>();
    for (let index = 0; byPort.size < cluster!.ports.length; index++) {
      const name = `smoke-${index}`;
      const port = await cluster!.portOfSlot(keySlot(`{${name}}`));
      if (!byPort.has(port)) byPort.set(port, name);
    }
    return [...byPort.values()];
  }

  it('computes the slots the server computes', async () => {
    const keys = ['celery', '{celery}', `${prefix}{celery}\x06\x163`, `${prefix}unacked{celery}`, `${prefix}{kq}_kombu.binding.x`, 'ü{ß}'];
    for (const key of keys) expect(keySlot(key)).toBe(Number(await raw!.cluster('KEYSLOT', key)));
  });

  it('serves one consumer from queues on every shard, fairly, each message once', async () => {
    const queues = await queueOnEachShard();
    const producer = transport();
    const channel = await producer.createChannel();
    for (const queue of queues) await channel.declareQueue(new Queue(queue));
    for (let index = 0; index < 30; index++) await channel.publish('', queues[index % 3] as string, message(`m${index}`));
    const got: Delivery[] = [];
    const consumer = await (await transport().createChannel()).consume({
      queues,
      prefetch: 6,
      onMessage: (delivery) => {
        got.push(delivery);
        void delivery.ack();
      },
    });
    await waitFor(() => got.length === 30, 10_000, '30 deliveries');
    expect(new Set(got.map((delivery) => delivery.body.toString())).size).toBe(30);
    // Every window of three deliveries (all queues still non-empty) has one of each queue.
    const order = got.map((delivery) => queues.indexOf(delivery.deliveryInfo.queue)).join('');
    for (let at = 0; at + 3 <= 27; at++) expect(new Set(order.slice(at, at + 3)).size, `queue order ${order}`).toBe(3);
    await consumer.cancel();
    // Each queue's records are its own, in its own slot; once the acks land, nothing is left held.
    for (const queue of queues) await waitFor(async () => (await raw!.hlen(`${prefix}unacked{${queue}}`)) === 0, 5000, `${queue} settled`);
  });

  it('brings back what a crashed consumer held, from the queue’s own records', async () => {
    const [queue] = await queueOnEachShard();
    const producer = transport({ leaseMs: 600, sweepIntervalMs: 100 });
    const channel = await producer.createChannel();
    await channel.declareQueue(new Queue(queue as string));
    for (let index = 0; index < 5; index++) await channel.publish('', queue as string, message(`c${index}`));
    const doomed = transport({ leaseMs: 600 });
    const held: Delivery[] = [];
    await (await doomed.createChannel()).consume({ queues: [queue as string], prefetch: 5, onMessage: (delivery) => void held.push(delivery) });
    await waitFor(() => held.length === 5, 5000, 'five held');
    expect(await raw!.hlen(`${prefix}unacked{${queue}}`)).toBe(5);
    doomed.terminate();
    const back: Delivery[] = [];
    await channel.consume({
      queues: [queue as string],
      prefetch: 5,
      onMessage: (delivery) => {
        back.push(delivery);
        void delivery.ack();
      },
    });
    await waitFor(() => back.length === 5, 10_000, 'five back');
    expect(back.every((delivery) => delivery.deliveryInfo.redelivered)).toBe(true);
  });

  it('delivers a delayed message, and a fanout to queues on every shard', async () => {
    const queues = await queueOnEachShard();
    const producer = transport();
    const channel = await producer.createChannel();
    await channel.declareQueue(new Queue('smoke-delayed'));
    await channel.declareExchange(new Exchange('smoke.fan', { type: 'fanout' }));
    const fanned = queues.map((queue) => `${queue}.fan`);
    for (const queue of fanned) {
      await channel.declareQueue(new Queue(queue));
      await channel.bindQueue(queue, 'smoke.fan', '');
    }
    const got: string[] = [];
    const consumer = await (await transport().createChannel()).consume({
      queues: ['smoke-delayed', ...fanned],
      prefetch: 10,
      onMessage: (delivery) => {
        got.push(`${delivery.deliveryInfo.queue}:${delivery.body.toString()}`);
        void delivery.ack();
      },
    });
    const sent = Date.now();
    await channel.publish('', 'smoke-delayed', message('later'), { delay: 300 });
    await channel.publish('smoke.fan', '', message('all'));
    await waitFor(() => got.length === 4, 10_000, 'a delayed message and three fanout copies');
    expect(Date.now() - sent).toBeGreaterThanOrEqual(250);
    expect(got.sort()).toEqual([...fanned.map((queue) => `${queue}:all`), 'smoke-delayed:later'].sort());
    await consumer.cancel();
  });
});
