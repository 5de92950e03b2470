// The orchestrator's own view of the brokers: wiping the benchmark's Redis database, purging its RabbitMQ queues, and
// counting what is still queued or unacknowledged after a run — read from each system's storage, not taken from
// the runner's word.
import { connect, type Channel, type ChannelModel } from 'amqplib';
import { Redis } from 'ioredis';
import type { SystemId } from './systems';

/** What a queue still holds: waiting messages, deliveries taken but not acked, and failed jobs. */
export interface Leftover {
  queued: number;
  unacked: number;
  failed: number;
}

export class RedisAdmin {
  readonly #redis: Redis;
  readonly db: number;

  private constructor(redis: Redis, db: number) {
    this.#redis = redis;
    this.db = db;
  }

  /** Connects to the benchmark's database; refuses database 0, which is where people keep real data. */
  static async open(url: string): Promise<RedisAdmin> {
    const db = Number(new URL(url).pathname.replace(/^\//, '') || '0');
    if (!Number.isInteger(db) || db === 0) {
      throw new Error(`The benchmark flushes its Redis database between cases; give it one of its own, e.g. --redis-url redis://127.0.0.1:6379/15 (got ${url}).`);
    }
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, connectTimeout: 5000 });
    redis.on('error', () => undefined); // surfaced by the commands that fail
    await redis.connect();
    return new RedisAdmin(redis, db);
  }

  async version(): Promise<string> {
    const info = await this.#redis.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  }

  /** FLUSHDB of the benchmark's database only (never FLUSHALL). */
  async flush(): Promise<void> {
    await this.#redis.flushdb();
  }

  async leftover(system: SystemId, queue: string): Promise<Leftover> {
    const r = this.#redis;
    switch (system) {
      case 'bullmq': {
        const [wait, paused, prioritized, active, failed] = await Promise.all([
          r.llen(`bull:${queue}:wait`),
          r.llen(`bull:${queue}:paused`),
          r.zcard(`bull:${queue}:prioritized`),
          r.llen(`bull:${queue}:active`),
          r.zcard(`bull:${queue}:failed`),
        ]);
        return { queued: wait + paused + prioritized, unacked: active, failed };
      }
      case 'bee-queue': {
        const [waiting, active, failed] = await Promise.all([r.llen(`bq:${queue}:waiting`), r.llen(`bq:${queue}:active`), r.scard(`bq:${queue}:failed`)]);
        return { queued: waiting, unacked: active, failed };
      }
      default: {
        // Kombu's layout (kq, Python Celery, celery.node, the raw baseline): the queue is a list, taken messages
        // wait for their ack in the `unacked` hash.
        const [queued, unacked] = await Promise.all([r.llen(queue), r.hlen('unacked')]);
        return { queued, unacked, failed: 0 };
      }
    }
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}

export class AmqpAdmin {
  readonly #connection: ChannelModel;
  #channel: Channel | undefined;

  private constructor(connection: ChannelModel) {
    this.#connection = connection;
  }

  static async open(url: string): Promise<AmqpAdmin> {
    const connection = await connect(url);
    connection.on('error', () => undefined);
    return new AmqpAdmin(connection);
  }

  get version(): string {
    const version = this.#connection.connection.serverProperties.version;
    return typeof version === 'string' ? version : 'unknown';
  }

  /** Deletes the case's queue and the exchange of the same name that Celery-style clients declare. */
  async purge(queue: string): Promise<void> {
    await this.#use((channel) => channel.deleteQueue(queue));
    await this.#use((channel) => channel.deleteExchange(queue));
  }

  /** Deletes queues (missing ones are fine), pipelined on one channel. */
  async deleteQueues(names: readonly string[]): Promise<void> {
    await this.#use((channel) => Promise.all(names.map((name) => channel.deleteQueue(name))));
  }

  async leftover(queue: string): Promise<Leftover> {
    // Deliveries nobody acked went back to the queue when their consumer's connection closed.
    const stats = await this.#use((channel) => channel.checkQueue(queue));
    return { queued: stats?.messageCount ?? 0, unacked: 0, failed: 0 };
  }

  async close(): Promise<void> {
    await this.#connection.close().catch(() => undefined);
  }

  /** Runs one operation; a channel error (a 404, say) closes the channel, so the next operation opens a new one. */
  async #use<T>(operation: (channel: Channel) => Promise<T>): Promise<T | undefined> {
    if (!this.#channel) {
      this.#channel = await this.#connection.createChannel();
      this.#channel.on('error', () => undefined);
    }
    const channel = this.#channel;
    try {
      return await operation(channel);
    } catch (error) {
      this.#channel = undefined;
      await channel.close().catch(() => undefined);
      if (/NOT_FOUND|404/.test(String(error))) return undefined;
      throw error;
    }
  }
}
