import { BrokerUnreachable, KqError, QueueNotFound } from './errors';
import { Exchange } from './exchange';
import { DEFAULT_MAX_MESSAGE_SIZE, validMaxMessageSize } from './message-size';
import { type Queue } from './queue';
import { DEFAULT_RETRY_POLICY, retryAfterFailure, retryOver, type RetryHooks, type RetryPolicy } from './retry-policy';
import { sanitizeUrl } from './sanitize-url';
import type { Channel, Transport, TransportEvents } from './transport';
import { createTransport, type TransportOptions } from './transport-registry';
import { TypedEmitter } from './typed-emitter';

/** An exchange or queue that a connection declares (and re-declares after a reconnect). */
export type Entity = Exchange | Queue;

export interface ConnectionOptions {
  /** Passed to the transport the URL selects. */
  transportOptions?: TransportOptions;
  /** How `connect()` retries an unreachable broker. Default: forever, 0 → 2 s steps of 1 s, capped at 30 s. */
  connectRetryPolicy?: RetryPolicy;
  /** Default policy of `ensure()`. Default: Celery's publish policy (3 retries, 0/0.2/0.4 s... capped at 1 s). */
  retryPolicy?: RetryPolicy;
  /**
   * Largest message body in bytes, as sent: producers refuse a larger one (`MessageTooLarge`), consumers reject it
   * unread, and a compressed body may not inflate past it. Default {@link DEFAULT_MAX_MESSAGE_SIZE} (64 MiB); null for
   * no limit.
   */
  maxMessageSize?: number | null;
}

const DEFAULT_CONNECT_POLICY: RetryPolicy = { maxRetries: undefined, intervalStart: 0, intervalStep: 1000, intervalMax: 30_000, jitter: 0.2 };

/** What `Connection` reports beyond its transport's events. */
export type ConnectionEvents = TransportEvents & {
  /** A connect attempt failed and another follows in `delayMs` (`maxRetries` undefined: retrying for ever). */
  retrying: [reason: Error, attempt: number, delayMs: number, maxRetries: number | undefined];
};

/**
 * A broker connection in Kombu's sense: made from a URL, connects lazily, and `ensure()`s operations — a
 * recoverable failure (connection lost, channel closed) is retried on a fresh channel after re-declaring the
 * topology this connection declared before.
 */
export class Connection extends TypedEmitter<ConnectionEvents> {
  readonly url: string | undefined;
  /** The `maxMessageSize` producers and consumers on this connection enforce (null: none). */
  readonly maxMessageSize: number | null;
  readonly #options: ConnectionOptions;
  #transport: Transport | undefined;
  #transportPromise: Promise<Transport> | undefined;
  #channel: Promise<Channel> | undefined;
  /** The default channel once it has opened: lets `ensure()` start an operation without awaiting anything. */
  #openChannel: Channel | undefined;
  readonly #declared = new Map<string, Entity>();
  /**
   * Keys of `#declared` declared since the last failure (a lost connection, a failed `ensure()`, a consumer's channel
   * lost): those still stand on the broker, so a new channel need not declare them again. A fleet worker's start opens
   * several channels; re-declaring everything on each cost it ~50 extra round trips on RabbitMQ.
   */
  readonly #declaredSinceFailure = new Set<string>();
  /** Declarations under way, so concurrent publishers of a new queue share one (see `maybeDeclare`). */
  readonly #declaring = new Map<string, Promise<void>>();
  #closed = false;

  constructor(broker: string | Transport, options: ConnectionOptions = {}) {
    super();
    this.#options = options;
    this.maxMessageSize = options.maxMessageSize === undefined ? DEFAULT_MAX_MESSAGE_SIZE : validMaxMessageSize(options.maxMessageSize, 'The connection option');
    if (typeof broker === 'string') {
      this.url = broker;
    } else {
      this.url = undefined;
      this.#adopt(broker);
    }
  }

  /** The transport, created from the URL on first use. */
  async transport(): Promise<Transport> {
    if (this.#transport) return this.#transport;
    this.#transportPromise ??= createTransport(this.url as string, this.#options.transportOptions ?? {}).then((transport) =>
      this.#adopt(transport),
    );
    return this.#transportPromise;
  }

  get isConnected(): boolean {
    return this.#transport?.isConnected ?? false;
  }

  /**
   * Connects, retrying recoverable failures by `policy` (default `connectRetryPolicy`); each retry is reported as a
   * `retrying` event. When the policy gives up: `BrokerUnreachable`, naming the URL (password hidden) and the reason.
   */
  async connect(policy?: RetryPolicy): Promise<this> {
    this.#assertOpen();
    const transport = await this.transport();
    if (transport.isConnected) return this;
    const effective = policy ?? this.#options.connectRetryPolicy ?? DEFAULT_CONNECT_POLICY;
    let attempts = 1;
    try {
      await retryOver(() => transport.connect(), effective, {
        onRetry: (error, attempt, delay) => {
          attempts = attempt + 1;
          const reason = asError(error, 'connect failed');
          this.emit('retrying', reason, attempt, delay, effective.maxRetries);
          this.emit('error', asError(error, `connect attempt ${attempt} failed; retrying in ${delay} ms`));
        },
      });
    } catch (error) {
      if (error instanceof KqError && !error.recoverable) throw error; // a wrong URL, a missing package: not an outage
      throw new BrokerUnreachable(sanitizeUrl(this.url ?? transport.name), attempts, { cause: error });
    }
    return this;
  }

  /** The connection's default channel, reopened if it was closed; `connectPolicy` bounds connecting first. */
  async channel(connectPolicy?: RetryPolicy): Promise<Channel> {
    this.#assertOpen();
    const current = this.#channel;
    if (current) {
      const channel = await current.catch(() => undefined);
      if (channel?.isOpen) return channel;
      if (this.#channel === current) this.#channel = undefined;
    }
    this.#channel ??= this.#openDefaultChannel(connectPolicy);
    return this.#channel;
  }

  /** The default channel if it is open now, else undefined. */
  #channelNow(): Channel | undefined {
    const channel = this.#openChannel;
    return channel?.isOpen && !this.#closed ? channel : undefined;
  }

  /**
   * A new channel of its own (consumers use one each, so a slow consumer never blocks a publisher). The topology
   * declared through this connection is declared again on it if a failure came since: a lost connection (a restarted
   * broker may have lost it), or `afterFailure` (the caller's channel was lost or its consumer cancelled: something may
   * have been deleted).
   */
  async createChannel(connectPolicy?: RetryPolicy, options: { afterFailure?: boolean } = {}): Promise<Channel> {
    this.#assertOpen();
    await this.connect(connectPolicy);
    const channel = await (await this.transport()).createChannel();
    if (options.afterFailure) this.#declaredSinceFailure.clear();
    await this.#redeclare(channel);
    return channel;
  }

  /** Declares an entity and remembers it, so it is declared again on the next new channel after a failure. */
  async declare(entity: Entity, channel?: Channel): Promise<void> {
    const target = channel ?? (await this.channel());
    await declareEntity(target, entity);
    const key = entityKey(entity);
    this.#declared.set(key, entity);
    this.#declaredSinceFailure.add(key);
  }

  /**
   * Declares `entity` unless this connection already did (Kombu's `maybe_declare`). Concurrent callers share one
   * declaration: a thousand publishes started together to a new queue declare it once, not a thousand times.
   */
  async maybeDeclare(entity: Entity): Promise<void> {
    const key = entityKey(entity);
    if (this.#declared.has(key)) return;
    let pending = this.#declaring.get(key);
    if (!pending) {
      pending = this.declare(entity).finally(() => this.#declaring.delete(key));
      this.#declaring.set(key, pending);
    }
    return pending;
  }

  /** Stops re-declaring an entity on new channels — call it when the entity was deleted on purpose. */
  forget(entity: Entity): void {
    const key = entityKey(entity);
    this.#declared.delete(key);
    this.#declaredSinceFailure.delete(key);
  }

  /** True when this connection already declared the entity (Kombu's `maybe_declare` cache). */
  hasDeclared(entity: Entity): boolean {
    return this.#declared.has(entityKey(entity));
  }

  /**
   * Runs `operation` on the default channel; if it fails with a recoverable error, drops the channel, reconnects,
   * re-declares the remembered topology and tries again, by `policy`.
   */
  ensure<T>(operation: (channel: Channel) => Promise<T>, policy?: RetryPolicy): Promise<T> {
    const effective = policy ?? this.#options.retryPolicy ?? DEFAULT_RETRY_POLICY;
    // A broker that cannot be reached fails the operation within its own policy, not the connect policy (for ever).
    const attempt = async (): Promise<T> => operation(await this.channel(effective));
    const open = this.#channelNow();
    if (!open) return retryOver(attempt, effective, this.#ensureHooks);
    // The common case (a publish on an open channel) makes its first attempt directly: no retry loop, no awaits of
    // its own. Only a failure pays for the machinery, with the same retries as above.
    let first: Promise<T>;
    try {
      first = operation(open);
    } catch (error) {
      first = Promise.reject(error);
    }
    return first.catch((error: unknown) => retryAfterFailure(error, attempt, effective, this.#ensureHooks));
  }

  readonly #ensureHooks: RetryHooks = {
    onRetry: async (error) => {
      this.emit('error', asError(error, 'operation failed; retrying on a fresh channel'));
      this.#declaredSinceFailure.clear();
      const stale = this.#channel;
      this.#channel = undefined;
      this.#openChannel = undefined;
      const channel = await stale?.catch(() => undefined);
      await channel?.close().catch(() => undefined);
    },
  };

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const channel = await this.#channel?.catch(() => undefined);
    this.#channel = undefined;
    this.#openChannel = undefined;
    await channel?.close().catch(() => undefined);
    await this.#transport?.close();
  }

  #adopt(transport: Transport): Transport {
    this.#transport = transport;
    transport.on('connected', () => this.emit('connected'));
    transport.on('disconnected', (error) => {
      this.#declaredSinceFailure.clear();
      this.emit('disconnected', error);
    });
    transport.on('error', (error) => this.emit('error', error));
    return transport;
  }

  async #openDefaultChannel(connectPolicy?: RetryPolicy): Promise<Channel> {
    try {
      const channel = await this.createChannel(connectPolicy);
      this.#openChannel = channel;
      return channel;
    } catch (error) {
      this.#channel = undefined;
      throw error;
    }
  }

  async #redeclare(channel: Channel): Promise<void> {
    for (const [key, entity] of this.#declared) {
      if (this.#declaredSinceFailure.has(key)) continue;
      await declareEntity(channel, entity);
      this.#declaredSinceFailure.add(key);
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new KqError('This connection is closed; create a new Connection.');
  }
}

/**
 * Declares an exchange, or a queue and its bindings. A queue that vanished between its declaration and a binding
 * (an auto-delete queue whose last consumer just left, or one past its `x-expires`) is declared and bound once more:
 * that is a race with the broker, not a mistake, and failing would fail whatever opened the channel.
 */
export async function declareEntity(channel: Channel, entity: Entity): Promise<void> {
  if (entity instanceof Exchange) {
    await channel.declareExchange(entity);
    return;
  }
  try {
    await channel.declareQueue(entity);
  } catch (error) {
    if (!(error instanceof QueueNotFound) || error.queue !== entity.name) throw error;
    await channel.declareQueue(entity);
  }
}

// Entities are immutable and a sender reuses the same ones, so each one's key is built once.
const entityKeys = new WeakMap<Entity, string>();

function entityKey(entity: Entity): string {
  let key = entityKeys.get(entity);
  if (key === undefined) {
    key = entity instanceof Exchange ? `exchange:${entity.name}` : `queue:${entity.name}`;
    entityKeys.set(entity, key);
  }
  return key;
}

function asError(error: unknown, context: string): Error {
  const message = error instanceof Error ? error.message : String(error);
  return new KqError(`${context}: ${message}`, { cause: error });
}
