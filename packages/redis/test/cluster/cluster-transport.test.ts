import { Exchange, Queue, type Delivery } from '@kq/core';
import { startRedisClusterOrSkip } from '@kq/test-harness';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { keySlot } from '../../src/cluster-slot';
import type { RedisTransport, RedisTransportOptions } from '../../src/index';
import { clusterPrefix, clusterQueueDepth, makeClusterTransport, rawCluster } from '../helpers/cluster-test-env';
import { waitFor } from '../helpers/redis-test-env';

// What the cluster layout does differently from Kombu's, each on a 3-master cluster of this file's own (`pnpm
// test:clusters`): waits on queues of several shards, sweeps and promotions of queues a process never touched,
// visibility restores from a queue's own records, and dead letters across slots.
const cluster = await startRedisClusterOrSkip();
const prefix = clusterPrefix('cluster-transport');
const raw = cluster ? rawCluster(cluster) : undefined;
const transports: RedisTransport[] = [];
let serial = 0;

afterEach(async () => {
  await Promise.all(transports.splice(0).map((transport) => transport.close().catch(() => undefined)));
});

afterAll(async () => {
  raw?.disconnect();
  await cluster?.destroy();
});

function message(text: string): { body: Buffer; contentType: string; contentEncoding: string; headers: Record<string, unknown>; properties: Record<string, unknown> } {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

describe.skipIf(!cluster)('redis cluster layout', () => {
  const transport = (options: RedisTransportOptions = {}): RedisTransport => {
    const made = makeClusterTransport(cluster!, prefix, { pollIntervalMs: 2000, ...options });
    transports.push(made);
    return made;
  };

  /** Fresh queue names, one on each master. */
  async function queueOnEachShard(): Promise<string[]> {
    const byPort = new Map<number, string>();
    const run = ++serial;
    for (let index = 0; byPort.size < cluster!.ports.length; index++) {
      const name = `ct${run}-${index}`;
      const port = await cluster!.portOfSlot(keySlot(`{${name}}`));
      if (!byPort.has(port)) byPort.set(port, name);
    }
    return [...byPort.values()];
  }

  it('an idle consumer of queues on three shards takes messages published to all at once, one at a time, none lost or doubled', async () => {
    const queues = await queueOnEachShard();
    const producer = transport();
    const channel = await producer.createChannel();
    for (const queue of queues) await channel.declareQueue(new Queue(queue));
    const got: string[] = [];
    let inFlight = 0;
    let most = 0;
    await (await transport().createChannel()).consume({
      queues,
      prefetch: 1,
      onMessage: (delivery: Delivery) => {
        inFlight++;
        most = Math.max(most, inFlight);
        got.push(delivery.body.toString());
        expect(delivery.deliveryInfo.redelivered).toBe(false);
        setTimeout(() => {
          inFlight--;
          void delivery.ack();
        }, 5);
      },
    });
    // Rounds of one message to each queue at the same moment: the consumer's three waits can each pop one, and what
    // it cannot take (prefetch 1) must go back untouched.
    const sent: string[] = [];
    for (let round = 0; round < 10; round++) {
      await waitFor(() => got.length === sent.length && inFlight === 0, 10_000, `round ${round - 1} consumed`);
      await new Promise((resolve) => setTimeout(resolve, 30)); // the consumer is waiting again
      const batch = queues.map((queue) => `${queue}:${round}`);
      sent.push(...batch);
      await Promise.all(batch.map((text, index) => channel.publish('', queues[index] as string, message(text))));
    }
    await waitFor(() => got.length === sent.length, 10_000, 'every message');
    expect(most).toBe(1);
    expect([...got].sort()).toEqual([...sent].sort());
    for (const queue of queues) expect(await clusterQueueDepth(raw!, prefix, queue)).toBe(0);
  });

  it('a process that never used a queue restores its expired leases (found through the registry)', async () => {
    const [queue, other] = await queueOnEachShard();
    const producer = transport();
    const channel = await producer.createChannel();
    await channel.declareQueue(new Queue(queue as string));
    for (let index = 0; index < 4; index++) await channel.publish('', queue as string, message(`r${index}`));
    const doomed = transport({ leaseMs: 500 });
    const held: Delivery[] = [];
    await (await doomed.createChannel()).consume({ queues: [queue as string], prefetch: 4, onMessage: (delivery) => void held.push(delivery) });
    await waitFor(() => held.length === 4, 5000, 'four held');
    doomed.terminate();
    // The sweeper belongs to a process consuming another queue only.
    const sweeper = transport({ leaseMs: 500, sweepIntervalMs: 100 });
    await (await sweeper.createChannel()).consume({ queues: [other as string], prefetch: 1, onMessage: () => undefined });
    await waitFor(async () => (await clusterQueueDepth(raw!, prefix, queue as string)) === 4, 10_000, 'the four back in their queue');
    expect(await raw!.hlen(`${prefix}unacked{${queue}}`)).toBe(0);
    // By its frequent sweeps, or by the one it runs as it starts when the leases ran out before it started (a slow start).
    // A sweep counts what it restored once it has been through every queue's records, after the four show here.
    const restored = (): number => sweeper.stats().leaseRestored + sweeper.stats().visibilityRestored;
    await waitFor(() => restored() === 4, 5000, 'the sweeper to count the four it restored');
  });

  it('a promoter that never used a queue moves its due delayed messages', async () => {
    const [queue] = await queueOnEachShard();
    const publisher = transport({ promoteDelayed: false });
    const channel = await publisher.createChannel();
    await channel.declareQueue(new Queue(queue as string));
    const promoter = transport();
    await promoter.connect();
    await channel.publish('', queue as string, message('later'), { delay: 200 });
    expect(await raw!.zcard(`${prefix}_kq.delayed{${queue}}`)).toBe(1);
    await waitFor(async () => (await clusterQueueDepth(raw!, prefix, queue as string)) === 1, 5000, 'the delayed message promoted');
    // The move is in Redis before the promoter has read its script's reply and counted it.
    await waitFor(() => promoter.stats().promoted === 1, 5000, 'the promoter to count the message it moved');
  });

  it('the visibility sweep restores a delivery no kq consumer holds from its queue’s own records, to that queue', async () => {
    const [queue] = await queueOnEachShard();
    const sweeper = transport({ visibilityTimeout: 1 });
    const channel = await sweeper.createChannel();
    await channel.declareQueue(new Queue(queue as string));
    await channel.publish('', queue as string, message('orphan'));
    // Claimed, then scored as a Python worker's delivery of long ago.
    const [claimed] = await sweeper.redisStore.claim([queue as string], { max: 1, blockMs: 0, noAck: false });
    expect(claimed).toBeDefined();
    await raw!.zadd(`${prefix}unacked_index{${queue}}`, 1, claimed!.message.deliveryTag);
    expect(await sweeper.redisStore.sweepVisibility()).toBe(1);
    expect(await clusterQueueDepth(raw!, prefix, queue as string)).toBe(1);
    expect(await raw!.hlen(`${prefix}unacked{${queue}}`)).toBe(0);
  });

  it('a rejected message kept in the dead letter list goes back to its queue on another shard', async () => {
    const [queue] = await queueOnEachShard();
    const producer = transport();
    const channel = await producer.createChannel();
    await channel.declareQueue(new Queue(queue as string));
    await channel.publish('', queue as string, message('bad'));
    const delivery = await channel.get(queue as string);
    await delivery?.reject('broken on purpose');
    const box = producer.deadLetters();
    expect((await box.list({ queue: queue as string })).map((letter) => letter.reason)).toEqual(['broken on purpose']);
    expect(await box.requeue({ queue: queue as string })).toBe(1);
    expect(await box.list({ queue: queue as string })).toEqual([]);
    expect((await channel.get(queue as string))?.body.toString()).toBe('bad');
  });

  it('a fanout exchange’s subscribers get its messages in publish order (one node forwards them all)', async () => {
    const [queue] = await queueOnEachShard();
    const producer = transport();
    const channel = await producer.createChannel();
    await channel.declareExchange(new Exchange(`${queue}.fan`, { type: 'fanout' }));
    await channel.declareQueue(new Queue(queue as string));
    await channel.bindQueue(queue as string, `${queue}.fan`, '');
    const got: string[] = [];
    await (await transport().createChannel()).consume({ queues: [queue as string], noAck: true, onMessage: (delivery) => void got.push(delivery.body.toString()) });
    const sent = Array.from({ length: 300 }, (_, index) => `f${index}`);
    await Promise.all(sent.map((text) => channel.publish(`${queue}.fan`, '', message(text))));
    await waitFor(() => got.length === sent.length, 10_000, 'every fanout message');
    expect(got).toEqual(sent);
  });
});
