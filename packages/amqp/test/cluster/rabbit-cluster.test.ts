/**
 * On a private three-node RabbitMQ cluster (quorum queues), the node that leads the queue — and that the clients are
 * connected to — is killed:
 * - a producer publishing with confirms loses nothing it was told was confirmed, and carries on through another node;
 * - kq beat's single-active-consumer lease elects the standby, with the state the old leader committed, and never
 *   lets two processes lead at once.
 * Run with `pnpm test:rabbit-cluster` (part of `pnpm test:clusters`).
 */
import { randomUUID } from 'node:crypto';
import { PublishRejected, Queue, type BeatLeadership, type Delivery } from '@kq/core';
import { RabbitCluster, freeRabbitPorts } from '@kq/test-harness/rabbit-cluster';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmqpBeatLease, AmqpTransport, } from '../../src/index';
import { message, waitFor } from '../helpers';

const CLUSTER_START_MS = 180_000;

/** The cluster's URL list with `first` tried first (Kombu's broker list: a client connects to its first node). */
function urlFrom(cluster: RabbitCluster, first: number): string {
  const urls = cluster.nodes.map((node) => node.url);
  return [...urls.slice(first), ...urls.slice(0, first)].join(';');
}

describe('publisher confirms across the failover of a three-node cluster', () => {
  let cluster: RabbitCluster;
  beforeAll(async () => {
    cluster = new RabbitCluster(await freeRabbitPorts(3));
    await cluster.start();
  }, CLUSTER_START_MS);
  afterAll(async () => {
    await cluster?.destroy();
  }, 60_000);

  it("loses no confirmed publish when the queue's leader, the producer's node, dies mid-stream", async () => {
    const queue = `kqt.cluster.confirms.${randomUUID().slice(0, 8)}`;
    const producer = new AmqpTransport(urlFrom(cluster, 0), { connectTimeout: 5000 });
    const channel = await producer.createChannel();
    await channel.declareQueue(new Queue(queue, { queueType: 'quorum' }));
    const total = 1500;
    const confirmed = new Set<number>();
    const failures: string[] = [];
    const refusals = new Set<string>();
    let killedAt = 0;
    let resumedAt = 0;
    let kill: Promise<void> | undefined;
    for (let i = 0; i < total; i++) {
      // A publish that fails (refused while the queue elects a leader, or cut off with the connection) is the
      // producer's to send again (at-least-once): it is never counted as confirmed.
      const giveUpAt = Date.now() + 60_000;
      for (;;) {
        try {
          await channel.publish('', queue, message(String(i), { properties: { deliveryMode: 2, messageId: String(i) } }));
          break;
        } catch (error) {
          failures.push(`${Date.now() - killedAt} ms: ${(error as Error).name}`);
          if (error instanceof PublishRejected) refusals.add(error.message);
          if (Date.now() > giveUpAt) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      confirmed.add(i);
      if (killedAt && !resumedAt) resumedAt = Date.now();
      if (i === 300) {
        const leader = await cluster.queueLeader(queue);
        expect(leader).toBe(cluster.nodes[0]);
        killedAt = Date.now();
        kill = cluster.killNode(leader);
      }
    }
    await kill;
    await producer.close();

    const consumer = new AmqpTransport(urlFrom(cluster, 1), { connectTimeout: 5000 });
    const reader = await consumer.createChannel();
    const seen = new Map<number, number>();
    const handle = await reader.consume({
      queues: [queue],
      prefetch: 200,
      onMessage: (delivery: Delivery) => {
        const i = Number(delivery.body.toString());
        seen.set(i, (seen.get(i) ?? 0) + 1);
        void delivery.ack();
      },
    });
    await waitFor(`all ${total} messages back`, () => (seen.size >= total ? true : undefined), 60_000);
    await new Promise((resolve) => setTimeout(resolve, 500)); // a late duplicate would arrive by now
    await handle.cancel();
    await consumer.close();

    const lost = [...confirmed].filter((i) => !seen.has(i));
    const duplicates = [...seen.values()].reduce((sum, count) => sum + count - 1, 0);
    console.log(
      `confirms across the failover: ${confirmed.size} confirmed, ${lost.length} lost, ${duplicates} duplicates, ` +
        `${failures.length} publish errors, ${resumedAt - killedAt} ms from the kill to the next confirm`,
    );
    console.log(`publish errors: ${[...new Set(failures.map((failure) => failure.split(': ')[1]))].join(', ')}; first ${failures[0]}, last ${failures.at(-1)}`);
    expect(lost).toEqual([]);
    expect(confirmed.size).toBe(total);
    // A nack during the election says the queue has no leader yet, not that it is full.
    for (const refusal of refusals) expect(refusal).toContain(`queue "${queue}" has no leader yet`);
    // Re-sent only what was unconfirmed when the connection died: a few, never the stream.
    expect(duplicates).toBeLessThan(50);
  }, 120_000);
});

describe("kq beat's single-active-consumer lease across a node kill", () => {
  let cluster: RabbitCluster;
  beforeAll(async () => {
    cluster = new RabbitCluster(await freeRabbitPorts(3));
    await cluster.start();
  }, CLUSTER_START_MS);
  afterAll(async () => {
    await cluster?.destroy();
  }, 60_000);

  it('elects the standby with the committed state when the leader and the lease queue lose their node', async () => {
    const group = `cluster-${randomUUID().slice(0, 8)}`;
    const transports = [new AmqpTransport(urlFrom(cluster, 0), { connectTimeout: 5000 }), new AmqpTransport(urlFrom(cluster, 1), { connectTimeout: 5000 })];
    const leading = new Map<string, BeatLeadership>();
    const overlaps: string[] = [];
    const elections: Array<{ who: string; epoch: number; at: number; lastTick: number | undefined }> = [];
    const leases = transports.map((transport, index) => {
      const who = index === 0 ? 'first' : 'second';
      const lease = new AmqpBeatLease(transport, { group, settleMs: 100, renewIntervalMs: 200 });
      return {
        lease,
        start: () =>
          lease.start({
            elected: (leadership) => {
              if (leading.size > 0) overlaps.push(`${who} elected while ${[...leading.keys()].join(', ')} led`);
              leading.set(who, leadership);
              elections.push({ who, epoch: leadership.epoch, at: Date.now(), lastTick: leadership.lastTicks.get('entry') });
            },
            deposed: () => void leading.delete(who),
            error: () => undefined,
          }),
      };
    });
    try {
      // A cluster URL makes the lease queue a quorum queue, replicated to every node.
      expect(leases.map(({ lease }) => lease.queueType)).toEqual(['quorum', 'quorum']);
      await leases[0]!.start();
      await waitFor('the first beat to lead', () => (leading.has('first') ? true : undefined), 15_000);
      expect(await leading.get('first')!.commit({ entry: 'entry', tick: 42 })).toBe('committed');
      await leases[1]!.start();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect([...leading.keys()]).toEqual(['first']);

      const leader = await cluster.queueLeader(`kq.beat.${group}`);
      // The first beat declared the queue through its node, the first: that node leads the queue.
      expect(leader).toBe(cluster.nodes[0]);
      const killedAt = Date.now();
      await cluster.killNode(leader);
      await waitFor('the second beat to lead', () => (leading.has('second') ? true : undefined), 60_000);
      const takeover = elections.find((election) => election.who === 'second')!;
      console.log(`beat lease across the node kill: the standby led after ${takeover.at - killedAt} ms, epoch ${takeover.epoch}`);
      expect(takeover.lastTick).toBe(42);
      expect(takeover.epoch).toBeGreaterThan(elections[0]!.epoch);
      expect(await leading.get('second')!.commit({ entry: 'entry', tick: 43 })).toBe('committed');
      expect(overlaps).toEqual([]);
      expect(leading.has('first')).toBe(false);
    } finally {
      for (const { lease } of leases) await lease.stop().catch(() => undefined);
      for (const transport of transports) await transport.close().catch(() => undefined);
    }
  }, 180_000);
});
