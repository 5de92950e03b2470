import { fileURLToPath } from 'node:url';
import { defineTransportSuite, startRedisClusterOrSkip } from '@kq/test-harness';
import { afterAll, describe, it } from 'vitest';
import { RedisTransport } from '../../src/index';
import { clusterPrefix, clusterQueueDepth, clusterUnackedCount, makeClusterTransport, rawCluster } from '../helpers/cluster-test-env';

// The whole conformance suite on kq's cluster layout, on a 3-master Redis Cluster of this file's own (`pnpm
// test:clusters`). Every transport of the run shares one key prefix, as in the single-server suite.
const cluster = await startRedisClusterOrSkip();
const prefix = clusterPrefix('cluster-conformance');
const LEASE_MS = 1500;
const probeClient = cluster ? rawCluster(cluster) : undefined;

afterAll(async () => {
  probeClient?.disconnect();
  await cluster?.destroy();
});

if (cluster && probeClient) {
  defineTransportSuite({
    name: 'redis cluster (3 masters)',
    create: () => makeClusterTransport(cluster, prefix, { pollIntervalMs: 250, leaseMs: LEASE_MS, sweepIntervalMs: 200 }),
    createWithPollInterval: (pollIntervalMs) => makeClusterTransport(cluster, prefix, { pollIntervalMs, leaseMs: LEASE_MS, sweepIntervalMs: 200 }),
    probe: {
      queueDepth: (queue) => clusterQueueDepth(probeClient, prefix, queue),
      unackedCount: (queue) => clusterUnackedCount(probeClient, prefix, queue),
    },
    crash: (transport) => {
      if (!(transport instanceof RedisTransport)) throw new TypeError('expected a RedisTransport');
      transport.terminate();
    },
    recoveryTimeoutMs: LEASE_MS * 4,
    leaseMs: LEASE_MS,
    peerModule: fileURLToPath(new URL('../helpers/cluster-conformance-peer.ts', import.meta.url)),
    peerEnv: { KQ_PEER_URL: cluster.url, KQ_PEER_PREFIX: prefix, KQ_PEER_LEASE_MS: String(LEASE_MS) },
    skipChecks: {
      checkPriorityAcrossQueues:
        'the cluster layout claims each queue in its own slot, so priorities order each queue, not several queues together (as on AMQP)',
    },
    createStalled: () =>
      makeClusterTransport(cluster, prefix, { pollIntervalMs: 250, leaseMs: LEASE_MS, leaseRenewIntervalMs: 1_000_000, sweepIntervalMs: 200 }),
  });
} else {
  describe.skip('transport conformance: redis cluster — skipped: no private Redis Cluster could start', () => {
    it('runs when redis-server 7 is installed', () => undefined);
  });
}
