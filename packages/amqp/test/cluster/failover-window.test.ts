/**
 * The publish failover window, measured over repeated kills (not part of CI: it takes a few minutes). On a private
 * three-node cluster, a producer connected first to the quorum queue's leader publishes with confirms, one at a
 * time, sending a refused publish again after RETRY_MS; the leader's node is SIGKILLed, and once publishing has
 * resumed it is restarted and rejoins. Per kill it records the publishes refused in a row (basic.nack while the
 * queue had no leader), the window from the first refusal to the next confirmed publish, and the time from the kill
 * to the next confirm. Run with `pnpm test:rabbit-failover-window` (KQ_RABBIT_FAILOVER_KILLS kills, default there 10).
 */
import { randomUUID } from 'node:crypto';
import { PublishRejected, Queue } from '@kq/core';
import { RabbitCluster, freeRabbitPorts, type RabbitNode } from '@kq/test-harness/rabbit-cluster';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmqpTransport } from '../../src/index';
import { message, sleep, waitFor } from '../helpers';

const KILLS = Number(process.env['KQ_RABBIT_FAILOVER_KILLS'] ?? 0);
/** A producer that sends a refused publish again at once (almost): the most refusals a window can hold. */
const RETRY_MS = 10;
const WARM_UP = 100;
const AFTER_KILL = 200;

interface KillRecord {
  /** Publishes refused after the kill before one was confirmed (each sent again after RETRY_MS). */
  refused: number;
  /** Refusals after publishing had resumed. */
  laterRefusals: number;
  otherErrors: string[];
  firstRefusalMs: number | undefined;
  windowMs: number | undefined;
  resumeMs: number;
}

function urlFrom(cluster: RabbitCluster, first: RabbitNode): string {
  const urls = cluster.nodes.map((node) => node.url);
  const index = cluster.nodes.indexOf(first);
  return [...urls.slice(index), ...urls.slice(0, index)].join(';');
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The quorum queue's members that are online, as RabbitMQ lists them. */
async function onlineMembers(node: RabbitNode, queue: string): Promise<number> {
  const listing = JSON.parse(await node.ctl('list_queues', 'name', 'online', '--formatter', 'json')) as Array<{ name: string; online?: unknown }>;
  const online = listing.find((entry) => entry.name === queue)?.online;
  return Array.isArray(online) ? online.length : 0;
}

describe.skipIf(KILLS <= 0)('the publish failover window over repeated leader kills', () => {
  let cluster: RabbitCluster;
  beforeAll(async () => {
    cluster = new RabbitCluster(await freeRabbitPorts(3));
    await cluster.start();
  }, 180_000);
  afterAll(async () => {
    await cluster?.destroy();
  }, 60_000);

  async function killOnce(queue: string): Promise<KillRecord> {
    const leader = await cluster.queueLeader(queue);
    const producer = new AmqpTransport(urlFrom(cluster, leader), { connectTimeout: 5000 });
    const record: KillRecord = { refused: 0, laterRefusals: 0, otherErrors: [], firstRefusalMs: undefined, windowMs: undefined, resumeMs: 0 };
    try {
      const channel = await producer.createChannel();
      await channel.declareQueue(new Queue(queue, { queueType: 'quorum' }));
      let killedAt = 0;
      let kill: Promise<void> | undefined;
      let afterKill = 0;
      for (let i = 0; i < WARM_UP + AFTER_KILL; i++) {
        const giveUpAt = Date.now() + 60_000;
        for (;;) {
          try {
            await channel.publish('', queue, message(String(i), { properties: { deliveryMode: 2 } }));
            break;
          } catch (error) {
            const at = Date.now() - killedAt;
            if (error instanceof PublishRejected) {
              if (afterKill === 0) record.refused++;
              else record.laterRefusals++;
              record.firstRefusalMs ??= at;
            } else {
              record.otherErrors.push(`${at} ms: ${(error as Error).name}`);
            }
            if (Date.now() > giveUpAt) throw error;
            await sleep(RETRY_MS);
          }
        }
        if (killedAt) {
          afterKill++;
          const at = Date.now() - killedAt;
          if (afterKill === 1) record.resumeMs = at;
          if (record.firstRefusalMs !== undefined) record.windowMs ??= at - record.firstRefusalMs;
        }
        if (i === WARM_UP - 1) {
          killedAt = Date.now();
          kill = cluster.killNode(leader);
        }
      }
      await kill;
    } finally {
      await producer.close();
    }
    await cluster.restartNode(leader);
    const live = cluster.nodes.find((node) => node !== leader) as RabbitNode;
    await waitFor(`all three members of ${queue} online`, async () => (await onlineMembers(live, queue)) === 3, 60_000);
    return record;
  }

  it(`records the refusals and the window of each of ${KILLS} leader kills`, async () => {
    const queue = `kqt.cluster.window.${randomUUID().slice(0, 8)}`;
    const setup = new AmqpTransport(cluster.url, { connectTimeout: 5000 });
    await (await setup.createChannel()).declareQueue(new Queue(queue, { queueType: 'quorum' }));
    await setup.close();
    const records: KillRecord[] = [];
    for (let kill = 1; kill <= KILLS; kill++) {
      const record = await killOnce(queue);
      records.push(record);
      console.log(
        `kill ${kill}: ${record.refused} refused in a row, first ${record.firstRefusalMs ?? '-'} ms after the kill, ` +
          `window ${record.windowMs ?? '-'} ms, next confirm ${record.resumeMs} ms after the kill` +
          (record.laterRefusals > 0 ? `, ${record.laterRefusals} refused later` : '') +
          (record.otherErrors.length > 0 ? `; other errors: ${record.otherErrors.join(', ')}` : ''),
      );
    }
    const refused = records.map((record) => record.refused);
    const resume = records.map((record) => record.resumeMs);
    const windows = records.flatMap((record) => (record.windowMs === undefined ? [] : [record.windowMs]));
    console.log(
      `over ${KILLS} kills: refused in a row median ${median(refused)}, worst ${Math.max(...refused)}; ` +
        `kill to next confirm median ${median(resume)} ms, worst ${Math.max(...resume)} ms; ` +
        (windows.length > 0
          ? `first refusal to next confirm (${windows.length} kills with refusals) median ${median(windows)} ms, worst ${Math.max(...windows)} ms`
          : 'no kill had a refusal'),
    );
    expect(records).toHaveLength(KILLS);
  }, 60_000 + KILLS * 120_000);
});
