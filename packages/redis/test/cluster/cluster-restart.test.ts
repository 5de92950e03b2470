import { Exchange, Queue } from '@kq/core';
import { startRedisClusterOrSkip } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import type { RedisTransport } from '../../src/index';
import { clusterPrefix, makeClusterTransport } from '../helpers/cluster-test-env';
import { waitFor } from '../helpers/redis-test-env';

// The whole cluster down for a while and back (a cluster of this file's own, `pnpm test:clusters`): the fanout
// subscriber waits it out with backoff and hears messages again once a node answers.
const cluster = await startRedisClusterOrSkip();
const prefix = clusterPrefix('cluster-restart');
const transports: RedisTransport[] = [];

afterAll(async () => {
  await Promise.all(transports.map((transport) => transport.close().catch(() => undefined)));
  await cluster?.destroy();
});

function message(text: string): { body: Buffer; contentType: string; contentEncoding: string; headers: Record<string, unknown>; properties: Record<string, unknown> } {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

describe.skipIf(!cluster)('a Redis Cluster down and back', () => {
  it('a fanout subscriber reconnects with backoff, without a reconnect storm, and hears the exchange again', async () => {
    const transport = (): RedisTransport => {
      const made = makeClusterTransport(cluster!, prefix, { pollIntervalMs: 500 });
      transports.push(made);
      return made;
    };
    const producer = await transport().createChannel();
    await producer.declareExchange(new Exchange('restart.fan', { type: 'fanout' }));
    await producer.declareQueue(new Queue('restart.q'));
    await producer.bindQueue('restart.q', 'restart.fan', '');
    const got: string[] = [];
    await (await transport().createChannel()).consume({ queues: ['restart.q'], noAck: true, onMessage: (delivery) => void got.push(delivery.body.toString()) });
    await producer.publish('restart.fan', '', message('before'));
    await waitFor(() => got.includes('before'), 10_000, 'the message sent before the outage');

    // ioredis's own cluster subscriber, with no node reachable, made a new connection after each failed one at once:
    // CPU spinning, memory growing, and this warning within a second or two (redis/ioredis#2030).
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      await cluster!.kill();
      await new Promise((resolve) => setTimeout(resolve, 3000));
      await cluster!.start();
      // Fanout is at most once: publish until the subscriber, back on some node, hears one.
      let sent = 0;
      await waitFor(
        async () => {
          await producer.publish('restart.fan', '', message(`after-${++sent}`)).catch(() => undefined);
          await new Promise((resolve) => setTimeout(resolve, 200));
          return got.some((text) => text.startsWith('after-'));
        },
        30_000,
        'a message sent after the cluster came back',
      );
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((warning) => warning.startsWith('MaxListenersExceededWarning'))).toEqual([]);
  });
});
