import { ConnectionLost } from '@kq/core';
import type { Cluster, Redis } from 'ioredis';
import { BlockingPool, type BlockingWaiter } from './blocking-pool';
import { masterOf } from './cluster-routing';
import type { ConnectionFactory } from './connection-factory';

interface NodePool {
  readonly pool: BlockingPool;
  /** Sends CLIENT UNBLOCK to that node (a blocked connection's id means something on its own server only). */
  readonly control: Redis;
}

/**
 * BRPOP on a Redis Cluster: a blocking command may only name keys of one slot, and holds its connection, so the
 * waits go over plain connections to the master serving the keys' slot — a `BlockingPool` per node, each with a
 * control connection to that node for CLIENT UNBLOCK. The slot map is the command connection's (ioredis keeps it
 * current); a wait that meets a moved slot asks for a fresh map and fails as a connection loss, so the consumer
 * tries again against the new owner.
 */
export class ClusterBlockingPool implements BlockingWaiter {
  readonly #factory: ConnectionFactory;
  readonly #commands: Cluster;
  readonly #nodes = new Map<string, NodePool>();
  #closed = false;

  constructor(factory: ConnectionFactory, commands: Cluster) {
    this.#factory = factory;
    this.#commands = commands;
  }

  get size(): number {
    let total = 0;
    for (const { pool } of this.#nodes.values()) total += pool.size;
    return total;
  }

  async brpop(keys: readonly string[], timeoutMs: number, signal: AbortSignal | undefined): Promise<[string, string] | null> {
    if (this.#closed || signal?.aborted || keys.length === 0) return null;
    const node = this.#nodeOf(keys[0] as string);
    try {
      return await this.#poolOf(node).pool.brpop(keys, timeoutMs, signal);
    } catch (error) {
      if (error instanceof Error && /^(MOVED|ASK|CLUSTERDOWN|TRYAGAIN)\b/.test(error.message)) {
        this.#commands.refreshSlotsCache();
        throw new ConnectionLost(`The Redis Cluster slot of ${JSON.stringify(keys[0])} is moving (${error.message}); waiting again.`, { cause: error });
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const nodes = [...this.#nodes.values()];
    this.#nodes.clear();
    await Promise.all(nodes.map(({ pool }) => pool.close()));
    for (const { control } of nodes) control.disconnect();
  }

  terminate(): void {
    void this.close();
  }

  /** The master serving the key's slot, as `host:port`. */
  #nodeOf(key: string): string {
    const owner = masterOf(this.#commands, key);
    if (owner === undefined) {
      this.#commands.refreshSlotsCache();
      throw new ConnectionLost(`No Redis Cluster node serves the slot of ${JSON.stringify(key)} yet; is every slot assigned (CLUSTER INFO)?`);
    }
    return owner;
  }

  #poolOf(node: string): NodePool {
    let entry = this.#nodes.get(node);
    if (!entry) {
      const at = node.lastIndexOf(':');
      const address = { host: node.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(node.slice(at + 1)) };
      const control = this.#factory.create(`unblock@${node}`, { enableAutoPipelining: false }, address);
      const pool = new BlockingPool({ create: (role, overrides) => this.#factory.create(`${role}@${node}`, overrides, address) }, control);
      entry = { pool, control };
      this.#nodes.set(node, entry);
    }
    return entry;
  }
}
