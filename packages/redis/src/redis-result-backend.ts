import { randomUUID } from 'node:crypto';
import {
  BoundedMap,
  ConnectionLost,
  EncodeError,
  KqError,
  isReadyState,
  type ResultBackend,
  type ResultMeta,
  type StoreResultOptions,
  type WaitForResultOptions,
  waitForResultMeta,
  type ResultWaiter,
} from '@kq/core';
import type { RedisOptions } from 'ioredis';
import { Cluster, Redis } from './ioredis-module';
import { parseBrokerUrl } from './broker-url';
import { guardClusterTls, guardTls, tlsFailureFor } from './tls-guard';
import { knownNodes } from './cluster-routing';
import type { RedisClient } from './connection-factory';
import { RedisChordStore } from './redis-chord-store';
import { loadLuaScript } from './lua-script';
import { decodeResultMeta, encodeResultMeta } from './result-meta';
import type { ClusterNodeAddress } from './redis-options';
import { normaliseResultBackendOptions, withGlobalPrefix, type RedisResultBackendOptions } from './result-backend-options';

export { decodeResultMeta, encodeResultMeta } from './result-meta';
export type { RedisResultBackendOptions } from './result-backend-options';


/** Celery's `_MAX_STR_VALUE_SIZE`: Redis refuses values above 512 MiB. */
const MAX_VALUE_SIZE = 512 * 1024 * 1024;
const DEFAULT_EXPIRES_MS = 86_400_000;
const TASK_KEY_PREFIX = 'celery-task-meta-';
const GROUP_KEY_PREFIX = 'celery-taskset-meta-';
const MGET_CHUNK = 500;
/**
 * Channels nobody waits on any more are unsubscribed together, at most this long after the first (or as soon as
 * this many wait): one UNSUBSCRIBE for many results, and none written while the waiter's own code is about to run.
 */
const UNSUBSCRIBE_DELAY_MS = 20;
const UNSUBSCRIBE_BATCH = 256;
/**
 * How long a waiter on a task subscribed to before it was sent waits for the push before reading the key (see
 * `waitFor`); at most half the waiter's timeout.
 */
const EARLY_READ_DELAY_MS = 100;
/** Reconnects to one cluster node (200 ms apart) before the subscriber moves to another node. */
const SUBSCRIBER_NODE_RETRIES = 3;

/** One SUBSCRIBE on the shared subscriber connection, held by its waiters and/or by an early `onTaskCall`. */
interface Subscription {
  readonly channel: string;
  readonly taskId: string;
  readonly waiters: Set<ResultWaiter>;
  early: boolean;
  /** Settles once Redis acknowledged the SUBSCRIBE. */
  subscribed: Promise<void>;
}

/**
 * Celery's Redis result backend, key for key (docs/wire.md#on-redis): results live at `celery-task-meta-<id>` as
 * Celery's JSON, a store is `GET` (a stored SUCCESS is never overwritten) then `MULTI SETEX+PUBLISH EXEC` on the key's
 * name, and waiters are woken by that PUBLISH — one subscriber connection multiplexes every task being waited for, and
 * a `GET` after each SUBSCRIBE closes the race with a result stored just before (see `waitFor`). Python Celery clients and workers read
 * and write the same keys.
 */
export class RedisResultBackend implements ResultBackend {
  readonly name = 'redis';
  readonly pushes = true;
  /** The full prefix of task keys (and channels), `[<global prefix>]celery-task-meta-`. */
  readonly taskKeyPrefix: string;
  /** Celery's chord join and saved groups (`celery-taskset-meta-<gid>[.j|.t|.s]`). */
  readonly chordJoin: RedisChordStore;
  readonly groups: RedisChordStore;
  readonly #expiresMs: number;
  readonly #connectionOptions: RedisOptions;
  readonly #connectionName: string;
  readonly #maxEarly: number;
  readonly #logger: { warn(message: string): void } | undefined;
  /** A `Cluster` for `redis+cluster://` URLs: each key goes to the master serving its slot. */
  readonly #client: RedisClient;
  /** Startup nodes of a cluster (undefined for one server): where a subscriber can go (see #openSubscriber). */
  readonly #clusterNodes: readonly ClusterNodeAddress[] | undefined;
  /** Which cluster node the next subscriber connects to, counting up. */
  #subscriberTurn = 0;
  #subscriber: Redis | undefined;
  /** Settles once the subscriber connection first became ready (or failed to: its commands then report why). */
  #subscriberReady: Promise<void> | undefined;
  /** By channel (= key). */
  readonly #subscriptions = new Map<string, Subscription>();
  /** Subscriptions held by `onTaskCall`, oldest first. */
  readonly #early = new Set<Subscription>();
  /**
   * Ready results pushed to an early subscription before anyone waited (by task id, oldest first, at most
   * `maxEarlySubscriptions`): the first `waitFor` takes it, as Celery's client keeps such messages for the result
   * that asks later. Without it, a result that beats the caller's `get()` (the publish's reply was slow to come back)
   * costs a SUBSCRIBE and a GET more.
   */
  readonly #arrived: BoundedMap<string, ResultMeta>;
  /** Channels released since the last UNSUBSCRIBE (see UNSUBSCRIBE_DELAY_MS). */
  readonly #released = new Set<string>();
  #unsubscribeTimer: NodeJS.Timeout | undefined;
  #closed = false;
  /** The server as `redis[s]://host:port`, for TLS failures. */
  readonly #target: string;

  constructor(url: string | undefined, options: RedisResultBackendOptions = {}) {
    const endpoint = parseBrokerUrl(url, {
      ...(options.db !== undefined ? { db: options.db } : {}),
      ...(options.masterName !== undefined ? { masterName: options.masterName } : {}),
      ...(options.redisOptions !== undefined ? { redisOptions: options.redisOptions } : {}),
      ...(options.tls !== undefined ? { tls: options.tls } : {}),
      ...(options.sentinelTls !== undefined ? { sentinelTls: options.sentinelTls } : {}),
    });
    this.taskKeyPrefix = withGlobalPrefix(options.keyPrefix ?? '') + TASK_KEY_PREFIX;
    this.#expiresMs = options.resultExpiresMs ?? DEFAULT_EXPIRES_MS;
    if (!Number.isFinite(this.#expiresMs) || this.#expiresMs < 0) {
      throw new KqError(`resultExpiresMs must be a number of milliseconds ≥ 0 (0 keeps results forever), not ${String(this.#expiresMs)}.`);
    }
    const tls = endpoint.connection.tls || options.redisOptions?.tls ? { ...endpoint.connection.tls, ...options.redisOptions?.tls } : undefined;
    this.#connectionOptions = { ...options.redisOptions, ...endpoint.connection, ...(tls ? { tls } : {}), lazyConnect: true };
    this.#target = `${tls ? 'rediss' : 'redis'}://${endpoint.description.hostname}:${endpoint.description.port ?? 6379}`;
    this.#connectionName = `${(options.connectionName ?? 'kq').replace(/\s+/g, '_')}.results.${randomUUID().slice(0, 8)}`;
    this.#maxEarly = options.maxEarlySubscriptions ?? 10_000;
    this.#arrived = new BoundedMap(this.#maxEarly);
    this.#logger = options.logger;
    this.#clusterNodes = endpoint.cluster?.nodes;
    this.#client = this.#clusterNodes ? this.#connectCluster(this.#clusterNodes) : this.#connect('cmd', {});
    // A chord's three keys are written in one MULTI, which a cluster runs only within one slot: there they share the
    // group id as hash tag (no Celery reads a cluster, so no key name is owed to anyone).
    this.chordJoin = new RedisChordStore(this.#client, withGlobalPrefix(options.keyPrefix ?? '') + GROUP_KEY_PREFIX, {
      ordered: options.chordOrdered ?? true,
      hashTagged: this.#clusterNodes !== undefined,
    });
    this.groups = this.chordJoin;
  }

  /** The key (and PUB/SUB channel) of a task's result. */
  keyFor(taskId: string): string {
    return this.taskKeyPrefix + taskId;
  }

  async store(meta: ResultMeta, options: StoreResultOptions = {}): Promise<void> {
    this.#assertOpen();
    const key = this.keyFor(meta.task_id);
    const text = encodeResultMeta(meta);
    if (text.length > MAX_VALUE_SIZE) {
      throw new EncodeError(`The result of task ${meta.task_id} is larger than Redis accepts (512 MiB); return less data, or store it elsewhere and return a reference.`);
    }
    const expiresMs = options.expiresMs ?? this.#expiresMs;
    // Celery's rule (once SUCCESS is stored, later writes — a duplicate or lost execution — are dropped), checked
    // and written in one script: one round trip per result instead of a GET and a MULTI.
    await STORE_RESULT.run(this.#client, [key], [text, expiresMs > 0 ? Math.max(1, Math.ceil(expiresMs / 1000)) : 0]);
  }

  async get(taskId: string): Promise<ResultMeta | null> {
    this.#assertOpen();
    const text = await this.#client.get(this.keyFor(taskId));
    return text === null ? null : decodeResultMeta(text, taskId);
  }

  /**
   * Subscribes to the task's channel now, before the task is sent, as Celery's client does — without waiting for
   * Redis to confirm (neither does redis-py): `waitFor` reads the key once subscribed, so a result stored before the
   * SUBSCRIBE took effect is still seen, and the send is not held up by a round trip.
   */
  async onTaskCall(taskId: string): Promise<void> {
    this.#assertOpen();
    const subscription = this.#subscribe(taskId);
    if (!subscription.early) {
      subscription.early = true;
      this.#early.add(subscription);
      if (this.#early.size > this.#maxEarly) {
        const oldest = this.#early.values().next().value as Subscription;
        this.#dropEarly(oldest);
      }
    }
    subscription.subscribed.catch(() => this.#dropEarly(subscription));
  }

  waitFor(taskId: string, options: WaitForResultOptions = {}): Promise<ResultMeta> {
    if (this.#closed) return Promise.reject(closedError());
    const arrived = this.#arrived.get(taskId);
    if (arrived !== undefined && !options.signal?.aborted) {
      this.#arrived.delete(taskId);
      return Promise.resolve(arrived);
    }
    const subscription = this.#subscribe(taskId);
    return waitForResultMeta(
      taskId,
      options,
      (waiter) => {
        subscription.waiters.add(waiter);
        return () => {
          subscription.waiters.delete(waiter);
          this.#release(subscription);
        };
      },
      // Subscribed first, then read: a result stored before the SUBSCRIBE took effect is seen by the GET, one stored
      // after it is pushed. No polling. Not read when the push came first (it can ride in with the SUBSCRIBE's own
      // reply): nothing left to read. For a task subscribed to before it was sent (onTaskCall), the result is pushed
      // after the SUBSCRIBE, so the read is only a safety net (a SUBSCRIBE overtaken on the network by the task's
      // publish and its result, or a task id sent again after its SUCCESS was stored, which is not published again):
      // it waits EARLY_READ_DELAY_MS, and a push that settles the waiter first spares it, a write and a reply.
      (waiter) => {
        const early = subscription.early;
        const read = (): void => {
          if (!subscription.waiters.has(waiter)) return;
          this.get(taskId).then(
            (meta) => {
              if (meta && isReadyState(meta.status)) this.#deliver(subscription, meta);
            },
            (error: unknown) => waiter.reject(error),
          );
        };
        subscription.subscribed.then(
          () => {
            if (!early) return read();
            const delay = Math.min(EARLY_READ_DELAY_MS, (options.timeoutMs ?? Infinity) / 2);
            if (subscription.waiters.has(waiter)) setTimeout(read, delay).unref();
          },
          (error: unknown) => waiter.reject(error),
        );
      },
    );
  }

  /** Deletes the stored result (Celery's `forget`) and drops an early subscription nobody waits on. */
  async forget(taskId: string): Promise<void> {
    this.#assertOpen();
    const subscription = this.#subscriptions.get(this.keyFor(taskId));
    if (subscription) this.#dropEarly(subscription);
    this.#arrived.delete(taskId);
    await this.#client.del(this.keyFor(taskId));
  }

  /** Closes both connections; whoever still waits is rejected. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const subscription of [...this.#subscriptions.values()]) {
      for (const waiter of [...subscription.waiters]) waiter.reject(closedError(subscription.taskId));
    }
    this.#subscriptions.clear();
    this.#early.clear();
    this.#arrived.clear();
    this.#released.clear();
    if (this.#unsubscribeTimer) clearTimeout(this.#unsubscribeTimer);
    await Promise.all([disconnect(this.#client), this.#subscriber ? disconnect(this.#subscriber) : undefined]);
  }

  #connect(role: 'cmd' | 'sub', overrides: RedisOptions): Redis {
    const client = new Redis({ ...this.#connectionOptions, connectionName: `${this.#connectionName}.${role}`, ...overrides });
    // Failures reach the callers of the operations; the events only go to the logger (ioredis would print them).
    client.on('error', (error: Error) => this.#logger?.warn(`kq result backend (${role}): ${error.message}`));
    return guardTls(client, this.#target);
  }

  #connectCluster(nodes: readonly ClusterNodeAddress[]): Cluster {
    const client = new Cluster([...nodes], {
      redisOptions: { ...this.#connectionOptions, connectionName: `${this.#connectionName}.cmd` },
      lazyConnect: true,
      // A master that fails over (or a slot that moves) is found again from the other nodes instead of failing the command.
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
    });
    client.on('error', (error: Error) => this.#logger?.warn(`kq result backend (cmd): ${error.message}`));
    return guardClusterTls(client, this.#target.startsWith('rediss:') ? 'rediss' : 'redis', nodes);
  }

  #subscriberConnection(): Redis {
    return this.#subscriber ?? this.#openSubscriber(false);
  }

  /**
   * Resubscription is done here rather than by ioredis so that it is followed by a read of every pending key:
   * results published while the connection was down are not lost (Celery's `_reconnect_pubsub` does the same).
   * On a cluster the subscriber is a plain connection to one node (a cluster forwards every PUBLISH to all of its
   * nodes), and a node that stays unreachable is left for the next one, with the same resubscribe-and-read; ioredis's
   * own cluster subscriber moves too, but would not say when, so nothing could read what was published meanwhile.
   */
  #openSubscriber(replacing: boolean): Redis {
    const node = this.#clusterNodes ? this.#nextSubscriberNode(this.#clusterNodes) : undefined;
    // Channels are not per database: no SELECT to send on connect.
    const subscriber = this.#connect('sub', {
      autoResubscribe: false,
      db: 0,
      ...(node ? { host: node.host, port: node.port, retryStrategy: (times: number) => (times > SUBSCRIBER_NODE_RETRIES ? null : 200) } : {}),
    });
    // Nothing is subscribed before the connection is ready: a SUBSCRIBE queued while connecting could be written
    // before ioredis's own handshake (CLIENT SETNAME), which then fails in subscriber mode and loses a SUBSCRIBE
    // queued behind it — a waiter never woken.
    this.#subscriberReady = subscriber.connect().catch(() => undefined);
    let connectedBefore = replacing;
    subscriber.on('ready', () => {
      if (connectedBefore) void this.#resubscribe(subscriber);
      connectedBefore = true;
    });
    subscriber.on('message', (channel: string, message: string) => this.#onMessage(channel, message));
    if (node) {
      subscriber.once('end', () => {
        if (this.#subscriber !== subscriber || this.#closed) return;
        this.#subscriber = undefined;
        this.#logger?.warn(`kq result backend: the cluster node ${node.host}:${node.port} stays unreachable; subscribing on another one.`);
        this.#openSubscriber(true);
      });
    }
    this.#subscriber = subscriber;
    return subscriber;
  }

  /** The cluster's nodes as it last described them (replicas too), or the startup nodes until it has. */
  #nextSubscriberNode(startup: readonly ClusterNodeAddress[]): ClusterNodeAddress {
    const known = knownNodes(this.#client);
    const nodes = known.length > 0 ? known : startup;
    return nodes[this.#subscriberTurn++ % nodes.length] as ClusterNodeAddress;
  }

  #subscribe(taskId: string): Subscription {
    const channel = this.keyFor(taskId);
    let subscription = this.#subscriptions.get(channel);
    if (!subscription) {
      const created: Subscription = { channel, taskId, waiters: new Set(), early: false, subscribed: Promise.resolve() };
      const subscriber = this.#subscriberConnection();
      created.subscribed = (this.#subscriberReady ?? Promise.resolve())
        .then(() => subscriber.subscribe(channel))
        .then(
          () => undefined,
          (error: unknown) => {
            // A cluster subscriber given up for another node: the new one subscribes to every channel, then reads.
            if (this.#subscriber !== subscriber && this.#subscriber !== undefined && !this.#closed) return;
            // A later waiter must not inherit a failed subscription.
            if (this.#subscriptions.get(channel) === created && created.waiters.size === 0) this.#subscriptions.delete(channel);
            throw new ConnectionLost(`Could not subscribe to the result channel of task ${taskId}: ${messageOf(error)}`, { cause: error });
          },
        );
      created.subscribed.catch(() => undefined);
      this.#subscriptions.set(channel, created);
      subscription = created;
    }
    return subscription;
  }

  /** Unsubscribes once nobody holds the subscription (a moment later, with the others released meanwhile). */
  #release(subscription: Subscription): void {
    if (subscription.waiters.size > 0 || subscription.early) return;
    if (this.#subscriptions.get(subscription.channel) !== subscription) return;
    this.#subscriptions.delete(subscription.channel);
    if (this.#closed) return;
    this.#released.add(subscription.channel);
    if (this.#released.size >= UNSUBSCRIBE_BATCH) this.#unsubscribeReleased();
    else this.#unsubscribeTimer ??= setTimeout(() => this.#unsubscribeReleased(), UNSUBSCRIBE_DELAY_MS).unref();
  }

  #unsubscribeReleased(): void {
    if (this.#unsubscribeTimer) clearTimeout(this.#unsubscribeTimer);
    this.#unsubscribeTimer = undefined;
    // A channel subscribed again meanwhile (someone waits for the same task again) stays.
    const channels = [...this.#released].filter((channel) => !this.#subscriptions.has(channel));
    this.#released.clear();
    if (channels.length > 0 && !this.#closed) this.#subscriber?.unsubscribe(...channels).catch(() => undefined);
  }

  #dropEarly(subscription: Subscription): void {
    if (!subscription.early) return;
    subscription.early = false;
    this.#early.delete(subscription);
    this.#release(subscription);
  }

  /** A ready result for a subscription: every waiter gets it and the channel is unsubscribed, as Celery does. */
  #deliver(subscription: Subscription, meta: ResultMeta): void {
    if (subscription.waiters.size === 0 && subscription.early) this.#keepArrived(subscription.taskId, meta);
    for (const waiter of [...subscription.waiters]) waiter.resolve(meta);
    this.#dropEarly(subscription);
    this.#release(subscription);
  }

  #keepArrived(taskId: string, meta: ResultMeta): void {
    this.#arrived.delete(taskId);
    this.#arrived.set(taskId, meta);
  }

  #onMessage(channel: string, message: string): void {
    const subscription = this.#subscriptions.get(channel);
    if (!subscription) return;
    let meta: ResultMeta;
    try {
      meta = decodeResultMeta(message, subscription.taskId);
    } catch (error) {
      // Not ours to fail on: someone published something else on the channel. The key stays authoritative.
      this.#logger?.warn(`kq result backend: ignoring an undecodable message on ${channel}: ${messageOf(error)}`);
      return;
    }
    if (isReadyState(meta.status)) this.#deliver(subscription, meta);
  }

  async #resubscribe(subscriber: Redis): Promise<void> {
    const channels = [...this.#subscriptions.keys()];
    if (channels.length === 0 || this.#closed) return;
    try {
      await subscriber.subscribe(...channels);
      for (let start = 0; start < channels.length; start += MGET_CHUNK) {
        const chunk = channels.slice(start, start + MGET_CHUNK);
        // MGET reaches one slot on a cluster: there, a GET each (ioredis pipelines them per node).
        const values = this.#client instanceof Cluster ? await Promise.all(chunk.map((key) => this.#client.get(key))) : await this.#client.mget(...chunk);
        values.forEach((text, index) => {
          const subscription = this.#subscriptions.get(chunk[index] as string);
          if (text === null || !subscription) return;
          try {
            const meta = decodeResultMeta(text, subscription.taskId);
            if (isReadyState(meta.status)) this.#deliver(subscription, meta);
          } catch (error) {
            for (const waiter of [...subscription.waiters]) waiter.reject(error);
          }
        });
      }
    } catch (error) {
      this.#logger?.warn(`kq result backend: resubscribing after a reconnect failed: ${messageOf(error)}`);
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw closedError();
    // A TLS failure ended the connection for good (see guardTls): say why, rather than "Connection is closed".
    const tlsFailure = tlsFailureFor(this.#client) ?? tlsFailureFor(this.#subscriber);
    if (tlsFailure) throw tlsFailure;
  }
}

/**
 * Makes the backend for `redis://`, `rediss://`, `sentinel://` and `redis+cluster://` result backend URLs (core's
 * registry calls this).
 */
export function createResultBackend(url: string, options: Record<string, unknown> = {}): RedisResultBackend {
  return new RedisResultBackend(url, normaliseResultBackendOptions(options));
}

/**
 * Stores a result unless SUCCESS is stored already, and publishes it to the key's channel.
 * KEYS: the result key. ARGV: the meta text, seconds to keep it (0 = forever). Returns 1 when stored, 0 when not.
 * Celery and kq write `status` first (`{"status": "..."`), so it is read without decoding the whole result; a value
 * written some other way is decoded.
 */
const STORE_RESULT = loadLuaScript('store-result');

async function disconnect(client: RedisClient): Promise<void> {
  if (client.status === 'ready') {
    try {
      await client.quit();
      return;
    } catch {
      // fall through to a hard disconnect
    }
  }
  client.disconnect();
}

function closedError(taskId?: string): KqError {
  return new KqError(
    taskId === undefined
      ? 'This result backend is closed; create a new one (or use the app that owns it).'
      : `The result backend was closed while waiting for the result of task ${taskId}.`,
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
