import { Queue } from '@kq/core';
import type { RedisClient } from './connection-factory';
import type { KeyLayout } from './key-layout';
import { DRAIN_LISTS } from './lua-scripts';

/**
 * Queues as Kombu keeps them in Redis: one list per priority step, and kq's record of each declared queue's options
 * (`_kq.queues`). Declaring, looking up, sizing, purging and deleting; the messages themselves are the store's.
 */
export class RedisQueueAdmin {
  readonly #commands: () => RedisClient;
  readonly #layout: KeyLayout;

  constructor(commands: () => RedisClient, layout: KeyLayout) {
    this.#commands = commands;
    this.#layout = layout;
  }

  async declare(queue: Queue): Promise<void> {
    await this.#commands().hset(this.#layout.key('queues'), queue.name, JSON.stringify(queueOptions(queue)));
  }

  async lookup(name: string): Promise<Queue | undefined> {
    const stored = await this.#commands().hget(this.#layout.key('queues'), name);
    if (stored === null) return undefined;
    try {
      return new Queue(name, JSON.parse(stored) as ReturnType<typeof queueOptions>);
    } catch {
      return undefined;
    }
  }

  async exists(name: string): Promise<boolean> {
    const commands = this.#commands();
    const layout = this.#layout;
    if (layout.cluster) {
      // Two slots (the queue's, kq's shared one): a pipeline may not span them.
      const [lists, declared] = await Promise.all([commands.exists(...layout.queueKeys(name)), commands.hexists(layout.key('queues'), name)]);
      return lists > 0 || declared > 0;
    }
    const pipeline = commands.pipeline();
    pipeline.exists(...layout.queueKeys(name));
    pipeline.hexists(layout.key('queues'), name);
    const results = (await pipeline.exec()) ?? [];
    return results.some(([error, value]) => !error && Number(value) > 0);
  }

  /** Forgets a deleted queue's record and its fanout binding sets (its lists are purged first, its bindings removed). */
  async forget(name: string): Promise<void> {
    await this.#commands()
      .multi()
      .hdel(this.#layout.key('queues'), name)
      .del(this.#layout.fanoutBindingsKey(name), this.#layout.boundExchangesKey(name))
      .exec();
  }

  /** Empties the queue's lists at once; resolves to the messages they held. */
  async purge(name: string): Promise<number> {
    return Number(await DRAIN_LISTS.run(this.#commands(), this.#layout.queueKeys(name), []));
  }

  /** Kombu's list per priority step, each with its length (one pipelined LLEN each). */
  async sizesByStep(name: string): Promise<ReadonlyArray<{ step: number; messageCount: number }>> {
    const results = await this.#lengths(name);
    return this.#layout.steps.map((step, index) => {
      const [error, value] = results[index] ?? [null, 0];
      if (error) throw error;
      return { step, messageCount: Number(value) };
    });
  }

  async size(name: string): Promise<number> {
    let total = 0;
    for (const [error, value] of await this.#lengths(name)) {
      if (error) throw error;
      total += Number(value);
    }
    return total;
  }

  async #lengths(name: string): Promise<Array<[Error | null, unknown]>> {
    const pipeline = this.#commands().pipeline();
    for (const key of this.#layout.queueKeys(name)) pipeline.llen(key);
    return (await pipeline.exec()) ?? [];
  }
}

function queueOptions(queue: Queue): Record<string, unknown> {
  return {
    durable: queue.durable,
    exclusive: queue.exclusive,
    autoDelete: queue.autoDelete,
    maxPriority: queue.maxPriority,
    messageTtl: queue.messageTtl,
    expires: queue.expires,
    deadLetterExchange: queue.deadLetterExchange,
    deadLetterRoutingKey: queue.deadLetterRoutingKey,
    maxLength: queue.maxLength,
    maxLengthBytes: queue.maxLengthBytes,
    queueType: queue.queueType,
    deliveryLimit: queue.deliveryLimit,
    arguments: queue.extraArguments,
  };
}
