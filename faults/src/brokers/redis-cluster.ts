import { keySlot } from '@kq/redis';
import { startRedisCluster, type RedisClusterProcesses } from '@kq/test-harness/redis-cluster';
import type { BrokerNode } from './broker-node';

/**
 * A Redis Cluster of the suite's own: three masters, no replicas (the launcher the tests use, with an append-only
 * file fsynced on every write so `broker-restart` brings every node back with its data). Workers reach it by a
 * `redis+cluster://` URL, so they use kq's cluster layout. A master killed alone is out of scope: without replicas its
 * slots are down until it is back, which is what `broker-restart` (every node killed and started again) shows.
 */
export class RedisClusterNode implements BrokerNode {
  readonly kind = 'redis-cluster' as const;
  /** Made by the first start, on free ports of 17000–17099 (bus ports + 10000); later starts restart the same nodes. */
  #processes: RedisClusterProcesses | undefined;

  get url(): string {
    return this.#processes?.url ?? 'redis+cluster://127.0.0.1 (three free ports of 17000-17099, picked at start)';
  }

  async start(): Promise<void> {
    if (this.#processes) await this.#processes.start();
    else this.#processes = await startRedisCluster({ masters: 3, persistent: true });
  }

  /** Migrates the slot of the queue's hash tag (its lists and claim records) to the next master, a few keys at a time. */
  async reshard(queue: string): Promise<string> {
    const processes = this.#processes as RedisClusterProcesses;
    const slot = keySlot(`{${queue}}`);
    const from = await processes.portOfSlot(slot);
    const to = processes.ports[(processes.ports.indexOf(from) + 1) % processes.ports.length] as number;
    const started = Date.now();
    const moved = await processes.migrateSlot(slot, to, { batch: 2, pauseMs: 150 });
    return `slot ${slot} (${moved} keys) moved from :${from} to :${to} in ${((Date.now() - started) / 1000).toFixed(1)} s`;
  }

  async kill(): Promise<void> {
    await this.#processes?.kill();
  }

  pause(): void {
    this.#processes?.pause();
  }

  resume(): void {
    this.#processes?.resume();
  }

  async killConnections(): Promise<number> {
    return (await this.#processes?.killConnections()) ?? 0;
  }

  async destroy(): Promise<void> {
    await this.#processes?.destroy();
  }
}
