import { randomUUID } from 'node:crypto';
import type { RedisClusterProcesses } from '@kq/test-harness';
import { Cluster } from 'ioredis';
import { RedisTransport, type RedisTransportOptions } from '../../src/index';
import { quietLogger } from './redis-test-env';

/** A key prefix of its own per test file (and run). No braces: the cluster layout's hash tags must stay the queues'. */
export function clusterPrefix(file: string): string {
  return `kqtest:${file}:${randomUUID().slice(0, 8)}:`;
}

/** A plain ioredis Cluster client, to look at what the transport wrote. */
export function rawCluster(cluster: RedisClusterProcesses): Cluster {
  return new Cluster(cluster.nodes, { lazyConnect: false });
}

export function makeClusterTransport(cluster: RedisClusterProcesses, prefix: string, options: RedisTransportOptions = {}): RedisTransport {
  return new RedisTransport(cluster.url, { globalKeyprefix: prefix, logger: quietLogger, ...options });
}

/** Messages ready in a queue of the cluster layout: its lists are `{queue}` and `{queue}␆␆step`. */
export async function clusterQueueDepth(redis: Cluster, prefix: string, queue: string, steps: readonly number[] = [0, 3, 6, 9]): Promise<number> {
  const lengths = await Promise.all(steps.map((step) => redis.llen(step === 0 ? `${prefix}{${queue}}` : `${prefix}{${queue}}\x06\x16${step}`)));
  return lengths.reduce((sum, length) => sum + length, 0);
}

/**
 * Deliveries of a queue held unacked: Kombu's `unacked` hash (the cluster layout keeps one per queue), the record a
 * visibility sweep restores from, not kq's own lease records.
 */
export async function clusterUnackedCount(redis: Cluster, prefix: string, queue: string): Promise<number> {
  return redis.hlen(`${prefix}unacked{${queue}}`);
}
