import { fileURLToPath } from 'node:url';
import { brokerReachable, defineTransportSuite } from '@kq/test-harness';
import { afterAll, describe, it } from 'vitest';
import { RedisTransport } from '../src/index';
import { cleanup, makeTransport, rawClient, redisUrl, uniquePrefix } from './helpers/redis-test-env';

// Every transport of the run shares one key prefix (a second transport stands for a second process); the suite
// isolates tests by entity name and deletes what it declares; the prefix goes when the file is done.
const up = await brokerReachable('redis');
const prefix = uniquePrefix('conformance');
const LEASE_MS = 1500;
const probeClient = up ? rawClient() : undefined;

afterAll(async () => {
  if (!probeClient) return;
  await cleanup(probeClient, prefix);
  probeClient.disconnect();
});

if (up) {
  const redis = probeClient!;
  defineTransportSuite({
    name: 'redis',
    create: () => makeTransport(prefix, { pollIntervalMs: 250, leaseMs: LEASE_MS, sweepIntervalMs: 200 }),
    createWithPollInterval: (pollIntervalMs) => makeTransport(prefix, { pollIntervalMs, leaseMs: LEASE_MS, sweepIntervalMs: 200 }),
    probe: {
      async queueDepth(queue) {
        const lengths = await Promise.all([0, 3, 6, 9].map((step) => redis.llen(step === 0 ? `${prefix}${queue}` : `${prefix}${queue}\x06\x16${step}`)));
        return lengths.reduce((sum, length) => sum + length, 0);
      },
      // Kombu's own record of a delivery held (what a Python worker's visibility sweep restores), not kq's lease
      // records: [envelope, exchange, routing key]. The suite counts unacked messages it published through the
      // default exchange, whose routing key is the queue.
      async unackedCount(queue) {
        const records = await redis.hvals(`${prefix}unacked`);
        return records.filter((record) => {
          const [, exchange, routingKey] = JSON.parse(record) as [unknown, string, string];
          return exchange === '' && routingKey === queue;
        }).length;
      },
    },
    crash: (transport) => {
      if (!(transport instanceof RedisTransport)) throw new TypeError('expected a RedisTransport');
      transport.terminate();
    },
    recoveryTimeoutMs: LEASE_MS * 4,
    leaseMs: LEASE_MS,
    peerModule: fileURLToPath(new URL('./helpers/conformance-peer.ts', import.meta.url)),
    peerEnv: { KQ_PEER_URL: redisUrl(0), KQ_PEER_PREFIX: prefix, KQ_PEER_LEASE_MS: String(LEASE_MS) },
    // A process frozen past its lease: it claims and settles, but its heartbeat never comes.
    createStalled: () => makeTransport(prefix, { pollIntervalMs: 250, leaseMs: LEASE_MS, leaseRenewIntervalMs: 1_000_000, sweepIntervalMs: 200 }),
  });
} else {
  // A file with no test at all fails the run; this one says why it has none (brokerReachable printed the reason).
  describe.skip('transport conformance: redis — skipped: the broker is not reachable', () => {
    it('runs when the broker is up', () => undefined);
  });
}
