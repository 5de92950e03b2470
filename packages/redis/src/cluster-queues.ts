import type { RedisClient } from './connection-factory';
import type { KeyLayout } from './key-layout';

/**
 * The queues of the cluster layout whose scoped records may exist. Kombu's layout has one `unacked` hash and one
 * delayed set for every queue, so a sweep or a promotion is one script call; the cluster layout has one of each per
 * queue, in the queue's slot, so sweeps and promoters walk them queue by queue. The queues are found in a set in
 * kq's shared slot, which a process adds a queue to the first time it claims from it or delays a message to it.
 */
export class ClusterQueues {
  readonly #commands: () => RedisClient;
  readonly #layout: KeyLayout;
  /** Queues this process has added to the set (and still walks if the set is lost). */
  readonly #noted = new Set<string>();

  constructor(commands: () => RedisClient, layout: KeyLayout) {
    this.#commands = commands;
    this.#layout = layout;
  }

  /** Adds the queues to the set (once per process each). */
  async note(queues: readonly string[]): Promise<void> {
    const fresh = queues.filter((queue) => !this.#noted.has(queue));
    if (fresh.length === 0) return;
    // Checked before anything is written: a queue the cluster layout cannot place fails here with the reason.
    for (const queue of fresh) this.#layout.listName(queue, 0);
    await this.#commands().sadd(this.#layout.clusterQueuesKey(), ...fresh);
    for (const queue of fresh) this.#noted.add(queue);
  }

  /** Every queue in the set, and those this process noted. */
  async list(): Promise<string[]> {
    const members = await this.#commands().smembers(this.#layout.clusterQueuesKey());
    return [...new Set([...members, ...this.#noted])].sort();
  }

  /** Takes a deleted queue out of the set. */
  async forget(queue: string): Promise<void> {
    this.#noted.delete(queue);
    await this.#commands().srem(this.#layout.clusterQueuesKey(), queue);
  }
}
