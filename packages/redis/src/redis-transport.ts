import {
  KqError,
  VIRTUAL_MAX_PRIORITY,
  VirtualTransport,
  type BeatLeaseOptions,
  type Channel,
  type DeadLetterBox,
  type Exchange,
  type TransportDescription,
  type VirtualChannel,
} from '@kq/core';
import { RedisBeatLease } from './beat-lease';
import { parseBrokerUrl, type RedisEndpoint } from './broker-url';
import { ConnectionFactory } from './connection-factory';
import { RedisCycleRegister } from './cycle-register';
import { countDelayed } from './delayed-count';
import { defaultBlockMs } from './idle-wait';
import { DEFAULT_KEY_NAMES, KOMBU_SEP, KeyLayout } from './key-layout';
import { RedisChannel } from './redis-channel';
import { DEFAULTS, type RedisTransportOptions } from './redis-options';
import { randomUUID } from 'node:crypto';
import { RedisStore, type RedisStoreStats } from './redis-store';

/**
 * Kombu-compatible Redis transport (`redis://`, `rediss://`, `sentinel://`): Python Celery/Kombu processes and kq
 * processes share queues, bindings, the unacked hash and PUB/SUB fanout. `redis+cluster://` (or the `cluster` option)
 * selects kq's own Redis Cluster layout instead, which only kq processes speak (see the README). On top of Kombu's layout, deliveries a
 * kq consumer holds carry a lease renewed by a heartbeat — a long task is never redelivered by the visibility
 * timeout, a crashed kq consumer's deliveries come back after `leaseMs`, and a settle from a claim that was taken
 * back is refused (`StaleDeliveryError`). Delayed delivery is held in Redis.
 */
export class RedisTransport extends VirtualTransport {
  readonly name = 'redis';
  readonly redisStore: RedisStore;
  readonly layout: KeyLayout;
  readonly leaseMs: number;
  readonly #endpoint: RedisEndpoint;
  readonly #factory: ConnectionFactory;
  readonly #channels = new Set<VirtualChannel>();

  constructor(url?: string, options: RedisTransportOptions = {}) {
    const endpoint = parseBrokerUrl(url, options);
    const steps = validSteps(options.prioritySteps);
    const layout = new KeyLayout({
      prefix: options.globalKeyprefix ?? '',
      sep: options.sep ?? KOMBU_SEP,
      steps,
      fanoutPrefix: options.fanoutPrefix === false ? '' : typeof options.fanoutPrefix === 'string' ? options.fanoutPrefix : `/${endpoint.db}.`,
      fanoutPatterns: options.fanoutPatterns ?? true,
      cluster: endpoint.cluster !== undefined,
      names: {
        ...DEFAULT_KEY_NAMES,
        ...(options.unackedKey ? { unacked: options.unackedKey } : {}),
        ...(options.unackedIndexKey ? { unackedIndex: options.unackedIndexKey } : {}),
        ...(options.unackedMutexKey ? { unackedMutex: options.unackedMutexKey } : {}),
      },
    });
    const leaseMs = positive(options.leaseMs, 'leaseMs') ?? DEFAULTS.leaseMs;
    // The store and connections report through this; it reaches the transport once it exists (after super()).
    const signals = new TransportSignals();
    const logger = options.logger ?? console;
    const storeId = randomUUID().slice(0, 8);
    const factory = new ConnectionFactory({
      endpoint,
      namePrefix: options.connectionName ?? DEFAULTS.connectionName,
      storeId,
      redisOptions: options.redisOptions,
      onError: (error, role) => {
        // Connections report their own closing; only failures of a store in use are news.
        if (!store.closed) signals.send({ kind: 'error', error: new KqError(`Redis connection ${role}: ${error.message}`, { cause: error }) });
      },
    });
    const visibilityTimeout = positive(options.visibilityTimeout, 'visibilityTimeout') ?? DEFAULTS.visibilityTimeout;
    const sweepIntervalMs = positive(options.sweepIntervalMs, 'sweepIntervalMs');
    const store = new RedisStore({
      factory,
      layout,
      leaseMs,
      leaseRenewIntervalMs: renewInterval(options.leaseRenewIntervalMs, leaseMs, visibilityTimeout, logger),
      // Given, a fixed period; by default each sweep sets the next for when the first lease it saw runs out, a lease
      // away at most (see Sweeper).
      leaseSweepIntervalMs: sweepIntervalMs ?? Math.max(50, Math.min(leaseMs, visibilityTimeout * 1000)),
      leaseSweepFollowsExpiry: sweepIntervalMs === undefined,
      visibilitySweepIntervalMs: positive(options.visibilitySweepIntervalMs, 'visibilitySweepIntervalMs') ?? DEFAULTS.visibilitySweepIntervalMs,
      visibilityTimeout,
      ...(options.deadLetterMax === undefined ? {} : { deadLetterMax: positive(options.deadLetterMax, 'deadLetterMax') as number }),
      unackedRestoreLimit: positive(options.unackedRestoreLimit, 'unackedRestoreLimit') ?? DEFAULTS.unackedRestoreLimit,
      promoteDelayed: options.promoteDelayed ?? true,
      autoPipelining: options.autoPipelining ?? false,
      warn: (message) => logger.warn(message),
      onError: (error) => signals.send({ kind: 'error', error }),
      onConnectionState: (state) => signals.send({ kind: state }),
    });
    super(store, { ...options, prioritySteps: steps, pollIntervalMs: options.pollIntervalMs ?? defaultBlockMs(layout.cluster, options.redisOptions) });
    signals.attach((signal) => {
      if (signal.kind === 'error') this.reportError(signal.error);
      else if (signal.kind === 'lost') this.emit('disconnected');
      else this.emit('connected');
    });
    this.redisStore = store;
    this.layout = layout;
    this.leaseMs = leaseMs;
    this.#endpoint = endpoint;
    this.#factory = factory;
  }

  override async createChannel(): Promise<Channel> {
    await this.connect();
    const channel = new RedisChannel(
      this,
      (queues) => this.#learnFanoutBindings(queues),
      async () => countDelayed(this.redisStore.commands, this.layout, undefined, await this.redisStore.queueScopes()),
    );
    this.#channels.add(channel);
    channel.on('close', () => this.#channels.delete(channel));
    return channel;
  }

  override async close(): Promise<void> {
    await Promise.all([...this.#channels].map((channel) => channel.close()));
    await super.close();
  }

  /** `redis://…`, `rediss://…`, `sentinel://…` or `redis+cluster://…` (see `parseBrokerUrl`). */
  static fromUrl(url: string, options: RedisTransportOptions = {}): RedisTransport {
    return new RedisTransport(url, options);
  }

  /** Rejected task messages kept in `_kq.dead` (RabbitMQ would dead-letter them; Kombu's Redis drops them). */
  deadLetters(): DeadLetterBox {
    return this.redisStore.deadLetters;
  }

  /** kq beat's lease on this Redis: a fenced `SET NX PX` lease and the schedule's state (see `RedisBeatLease`). */
  beatLease(options: BeatLeaseOptions): RedisBeatLease {
    return new RedisBeatLease(this, options);
  }

  /** Periodic-task registers in this Redis, one hash each (see `RedisCycleRegister`). */
  cycleRegister(): RedisCycleRegister {
    return new RedisCycleRegister(this);
  }

  /** Where it connects (no password), the database as `virtualHost`. */
  describe(): TransportDescription {
    return { ...this.#endpoint.description };
  }

  /** The database number (also in the fanout channel prefix). */
  get db(): number {
    return this.#endpoint.db;
  }

  /** The CLIENT SETNAME prefix of this transport's connections (`<name>.<id>.`), to find them in CLIENT LIST. */
  get clientNamePrefix(): string {
    return this.#factory.namePrefix;
  }

  stats(): RedisStoreStats {
    return this.redisStore.stats();
  }

  /**
   * A declared exchange (this process or another kq process), else one guessed from Kombu's binding set — so kq can
   * publish to an exchange only a Python process declared, as Kombu itself treats an undeclared exchange as direct.
   */
  override async findExchange(name: string): Promise<Exchange | undefined> {
    return (await super.findExchange(name)) ?? (await this.redisStore.inferExchange(name));
  }

  /**
   * Drops every connection at once without restoring or renewing anything — what a crashed process leaves behind.
   * Its deliveries come back through other processes' sweeps once the leases run out. For tests and emergencies.
   */
  terminate(): void {
    this.redisStore.terminate();
  }

  async #learnFanoutBindings(queues: readonly string[]): Promise<void> {
    for (const queue of queues) {
      if (this.isLiveFanoutQueue(queue)) continue;
      for (const { exchange, routingKey } of await this.redisStore.fanoutBindingsOf(queue)) {
        // Only while the exchange is still a fanout one (it may have been deleted and re-declared since).
        if ((await this.findExchange(exchange))?.type === 'fanout') this.noteFanoutBinding(queue, exchange, routingKey);
      }
    }
  }

  /** Emits an asynchronous failure (a broken connection, a failed heartbeat) as an `error` event. */
  reportError(error: unknown): void {
    this.emit('error', error instanceof Error ? error : new Error(String(error)));
  }
}

type TransportSignal = { kind: 'error'; error: unknown } | { kind: 'lost' } | { kind: 'ready' };

/** Carries what the store reports to the transport, which does not exist yet while the store is made. */
class TransportSignals {
  #target: ((signal: TransportSignal) => void) | undefined;

  attach(target: (signal: TransportSignal) => void): void {
    this.#target = target;
  }

  send(signal: TransportSignal): void {
    this.#target?.(signal);
  }
}

function validSteps(steps: readonly number[] | undefined): readonly number[] {
  if (steps === undefined) return [0, 3, 6, 9];
  const valid = steps.length > 0 && steps.every((step) => Number.isInteger(step) && step >= 0 && step <= VIRTUAL_MAX_PRIORITY);
  if (!valid) {
    throw new KqError(`prioritySteps must be integers from 0 to ${VIRTUAL_MAX_PRIORITY}, e.g. [0, 3, 6, 9] (Kombu's default); got ${JSON.stringify(steps)}.`);
  }
  return [...new Set(steps)].sort((a, b) => a - b);
}

function positive(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new KqError(`The Redis transport option ${name} must be a positive number; got ${JSON.stringify(value)}.`);
  }
  return value;
}

/**
 * The heartbeat must beat both clocks that can take a held delivery back: kq's lease, and Kombu's visibility timeout
 * (a Python worker's sweep restores an `unacked_index` entry older than it, and the heartbeat is what refreshes that
 * score). A third of the shorter one leaves two heartbeats of slack; a configured interval too slow for the
 * visibility timeout is shortened, with a warning, rather than letting Python's sweep run long tasks twice.
 */
function renewInterval(configured: number | undefined, leaseMs: number, visibilityTimeout: number, logger: { warn(message: string): void }): number {
  const visibilityMs = visibilityTimeout * 1000;
  const safe = Math.max(50, Math.floor(Math.min(leaseMs, visibilityMs) / 3));
  const explicit = positive(configured, 'leaseRenewIntervalMs');
  if (explicit === undefined) return safe;
  if (explicit > visibilityMs / 2) {
    logger.warn(
      `kq/redis: leaseRenewIntervalMs ${explicit} is too slow for visibility_timeout ${visibilityTimeout}s (Kombu's sweep would ` +
        `restore held deliveries); renewing every ${safe} ms instead`,
    );
    return safe;
  }
  return explicit;
}
