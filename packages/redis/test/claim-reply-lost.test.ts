import { Queue, type OutgoingMessage } from '@kq/core';
import { brokerReachable, CuttingProxy, type CutMode } from '@kq/test-harness';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisTransport } from '../src/index';
import { cleanup, quietLogger, rawClient, redisUrl, uniquePrefix, waitFor } from './helpers/redis-test-env';

const up = await brokerReachable('redis');

function message(text: string): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

/**
 * A claim moves messages into an in-flight list of its own (LMOVE, in a pipeline), then records them. When the
 * connection drops after Redis ran the moves and before their replies arrive, ioredis sends the pipeline again on the
 * reconnected connection: the same list then holds the first moves too, which no reply named. They must be put back
 * at once — not recorded-and-deleted with the list (lost), nor left for the abandoned-list sweep a minute later.
 */
describe.skipIf(!up)('a claim whose reply is lost on the way', () => {
  const prefix = uniquePrefix('claim-reply-lost');
  let redis: Redis;
  let proxy: CuttingProxy;
  let url: string;
  const transports: RedisTransport[] = [];

  beforeAll(async () => {
    redis = rawClient();
    const target = new URL(redisUrl());
    proxy = new CuttingProxy({ host: target.hostname, port: Number(target.port || 6379) });
    url = `redis://127.0.0.1:${await proxy.listen()}/0`;
  });
  afterEach(async () => {
    await Promise.all(transports.splice(0).map((transport) => transport.close()));
  });
  afterAll(async () => {
    await proxy.close();
    await cleanup(redis, prefix);
    redis.disconnect();
  });

  async function deliveredAfterCut(mode: CutMode, queue: string): Promise<{ got: Set<string>; total: number }> {
    const total = 40;
    const publisher = new RedisTransport(redisUrl(), { globalKeyprefix: prefix, logger: quietLogger });
    // The abandoned-list sweep waits a minute; the lease is short so that anything held is seen to come back too.
    const consumerSide = new RedisTransport(url, { globalKeyprefix: prefix, logger: quietLogger, leaseMs: 1000, sweepIntervalMs: 200 });
    consumerSide.on('error', () => undefined);
    transports.push(publisher, consumerSide);
    const out = await publisher.createChannel();
    await out.declareQueue(new Queue(queue));
    // Queued before the consumer starts, so its first claims are LMOVE pipelines, not a BRPOP.
    for (let n = 0; n < total; n++) await out.publish('', queue, message(`m${n}`));
    const channel = await consumerSide.createChannel();
    const got = new Set<string>();
    const cutsBefore = proxy.cuts;
    proxy.arm(/lmove/i, mode);
    const consumer = await channel.consume({
      queues: [queue],
      prefetch: 8,
      onMessage: (delivery) => {
        got.add(delivery.body.toString());
        void delivery.ack().catch(() => undefined);
      },
    });
    await waitFor(() => got.size === total, 10_000, `all ${total} messages`).finally(() => consumer.cancel());
    expect(proxy.cuts - cutsBefore).toBe(1);
    // Nothing stays behind: no in-flight list, nothing queued.
    await waitFor(async () => (await redis.keys(`${prefix}_kq.inflight.*`)).length === 0 && (await redis.llen(`${prefix}${queue}`)) === 0, 5000, 'no list left');
    return { got, total };
  }

  it('the moves ran, no reply came, ioredis sent the pipeline again: the first moves are put back, none lost', async () => {
    const { got, total } = await deliveredAfterCut('whole-reply', 'cut.whole');
    expect(got.size).toBe(total);
  });

  it('hands out what it moved once the moves are answered, before the record is; the ack waits for the record', async () => {
    const publisher = new RedisTransport(redisUrl(), { globalKeyprefix: prefix, logger: quietLogger });
    const consumerSide = new RedisTransport(url, { globalKeyprefix: prefix, logger: quietLogger });
    consumerSide.on('error', () => undefined);
    transports.push(publisher, consumerSide);
    const out = await publisher.createChannel();
    await out.declareQueue(new Queue('early'));
    for (let n = 0; n < 3; n++) await out.publish('', 'early', message(`e${n}`));
    const channel = await consumerSide.createChannel();
    const cutsBefore = proxy.cuts;
    // The record is the MULTI after the moves: its reply held back 400 ms.
    proxy.arm(/multi/i, 'hold-reply', 400);
    const deliveredAt: number[] = [];
    const acked: Array<Promise<number>> = [];
    const consumer = await channel.consume({
      queues: ['early'],
      prefetch: 3,
      onMessage: (delivery) => {
        deliveredAt.push(performance.now());
        acked.push(delivery.ack().then(() => performance.now()));
      },
    });
    await waitFor(() => acked.length === 3, 5000, 'three deliveries');
    const ackedAt = await Promise.all(acked);
    await consumer.cancel();
    expect(proxy.cuts - cutsBefore).toBe(1);
    for (const at of deliveredAt) expect(at).toBeLessThan(proxy.releasedAt);
    for (const at of ackedAt) expect(at).toBeGreaterThanOrEqual(proxy.releasedAt);
    expect(await redis.hlen(`${prefix}unacked`)).toBe(0);
  });

  it('half the pipeline answered, the rest aborted: what it moved is put back at once, not a minute later', async () => {
    const { got, total } = await deliveredAfterCut('after-first-reply', 'cut.half');
    expect(got.size).toBe(total);
  });
});
