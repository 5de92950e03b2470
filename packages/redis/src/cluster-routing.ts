import type { Cluster, Redis } from 'ioredis';
import { keySlot } from './cluster-slot';
import type { RedisClient } from './connection-factory';
import type { ClusterNodeAddress } from './redis-options';

/** True for ioredis's `Cluster` (cluster mode), false for a connection to one server. */
export function isCluster(client: RedisClient): client is Cluster {
  return (client as Cluster).isCluster === true;
}

/** The master serving the slot of `key`, as `host:port` from ioredis's slot map; undefined until the map is known. */
export function masterOf(cluster: Cluster, key: string): string | undefined {
  return cluster.slots[keySlot(key)]?.[0];
}

/**
 * The cluster's own connection to the master serving `key`'s slot, for a command that must always reach the same node
 * although it names no key (ioredis sends those to any node).
 */
export function masterClientOf(cluster: Cluster, key: string): Redis | undefined {
  const owner = masterOf(cluster, key);
  if (owner === undefined) return undefined;
  return cluster.nodes('master').find((node) => `${node.options.host}:${node.options.port}` === owner);
}

/** The nodes a cluster client last described (masters and replicas); none for a connection to one server. */
export function knownNodes(client: RedisClient): ClusterNodeAddress[] {
  if (!isCluster(client)) return [];
  return client.nodes('all').flatMap(({ options }) => (options.host && options.port ? [{ host: options.host, port: options.port }] : []));
}
