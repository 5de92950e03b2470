import { ChannelClosed, ConnectionLost, KqError, retryDelay, TlsFailure, tlsFailureOf, TypedEmitter, type TransportEvents } from '@kq/core';
import { amqplib, type AmqplibConnection } from './amqplib-loader';
import { isConnectionFailure } from './amqp-errors';
import { closeQuietly } from './close-within';
import type { AmqpUrl } from './amqp-url';
import type { BrokerAlternates } from './broker-alternates';
import type { ResolvedAmqpOptions } from './options';

type SupervisorState = 'idle' | 'connecting' | 'ready' | 'reconnecting' | 'closed';

interface Waiter {
  resolve: (connection: AmqplibConnection) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

/** Runs after every (re)connect, before anyone else gets the connection: the transport re-declares topology here. */
export type ConnectedHook = (connection: AmqplibConnection, generation: number) => Promise<void>;

/**
 * Owns the amqplib connection: opens it lazily, and once it has been up, brings it back after every loss with
 * backoff for as long as the transport is open. Callers ask for `connection()` and wait (bounded) while it is
 * being recovered. Each successful connect bumps `generation`, which channels use to tell their own deliveries
 * from ones whose channel died with an earlier connection.
 */
export class ConnectionSupervisor extends TypedEmitter<TransportEvents> {
  readonly #brokers: BrokerAlternates;
  readonly #options: ResolvedAmqpOptions;
  readonly #onConnected: ConnectedHook;
  readonly #waiters = new Set<Waiter>();
  #state: SupervisorState = 'idle';
  #connection: AmqplibConnection | undefined;
  #attempt: Promise<AmqplibConnection> | undefined;
  #generation = 0;
  #reconnectAttempts = 0;
  #reconnectTimer: NodeJS.Timeout | undefined;

  constructor(brokers: BrokerAlternates, options: ResolvedAmqpOptions, onConnected: ConnectedHook) {
    super();
    this.#brokers = brokers;
    this.#options = options;
    this.#onConnected = onConnected;
  }

  get isConnected(): boolean {
    return this.#state === 'ready';
  }

  get isClosed(): boolean {
    return this.#state === 'closed';
  }

  /** Increases on every successful connect. */
  get generation(): number {
    return this.#generation;
  }

  /** The broker's version string (`3.10.8`), once connected. */
  get serverVersion(): string | undefined {
    return this.#connection?.connection.serverProperties.version;
  }

  /**
   * The ready connection. When idle this makes one attempt (failing with `ConnectionLost`); while a lost
   * connection is being recovered it waits up to `timeoutMs` for the recovery.
   */
  connection(timeoutMs: number = this.#options.recoveryTimeout): Promise<AmqplibConnection> {
    switch (this.#state) {
      case 'ready':
        return Promise.resolve(this.#connection as AmqplibConnection);
      case 'closed':
        return Promise.reject(new ChannelClosed('The AMQP transport is closed; create a new one.'));
      case 'connecting':
        return this.#attempt as Promise<AmqplibConnection>;
      case 'reconnecting':
        return this.#wait(timeoutMs);
      case 'idle':
        this.#state = 'connecting';
        this.#attempt = this.#establishAny().then(
          (connection) => {
            this.#attempt = undefined;
            return connection;
          },
          (error: unknown) => {
            this.#attempt = undefined;
            if (this.#state === 'connecting') this.#state = 'idle';
            throw asConnectionLost(error, this.#describeTarget());
          },
        );
        return this.#attempt;
    }
  }

  /** Drops the connection at once (destroys the socket), without the closing handshake and without reconnecting. */
  terminate(): void {
    if (this.#state === 'closed') return;
    this.#markClosed('terminated');
    const connection = this.#connection;
    this.#connection = undefined;
    // amqplib's ChannelModel keeps the socket on its connection; destroying it is what a crash looks like to the
    // broker. With an error, so amqplib sees it too (a plain destroy emits no 'end' or 'error', and its channels
    // would wait forever) and fails everything pending on the connection.
    (connection?.connection as unknown as { stream?: { destroy(error?: Error): void } } | undefined)?.stream?.destroy(
      new ConnectionLost('The AMQP transport was terminated.'),
    );
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#markClosed('closed');
    const connection = this.#connection ?? (await this.#attempt?.catch(() => undefined));
    this.#connection = undefined;
    if (connection) await closeQuietly(connection);
  }

  #markClosed(how: 'closed' | 'terminated'): void {
    this.#state = 'closed';
    clearTimeout(this.#reconnectTimer);
    for (const waiter of this.#waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(new ChannelClosed(`The AMQP transport was ${how} while waiting for the connection.`));
    }
    this.#waiters.clear();
  }

  /** Tries each broker of the URL list once, from the current one, until one connects. */
  async #establishAny(): Promise<AmqplibConnection> {
    let lastError: unknown;
    for (let tried = 0; tried < this.#brokers.urls.length; tried++) {
      try {
        return await this.#establish();
      } catch (error) {
        lastError = error;
        if (this.#state === 'closed') break;
        this.#brokers.next();
      }
    }
    throw lastError;
  }

  async #establish(): Promise<AmqplibConnection> {
    const connection = await this.#open();
    let lastError: Error | undefined;
    // amqplib re-emits socket and protocol failures as 'error' just before 'close'; an unheard 'error' would throw.
    connection.on('error', (error: Error) => (lastError = error));
    connection.on('close', (error?: Error) => this.#onClose(connection, error ?? lastError));
    connection.on('blocked', (reason: string) =>
      this.emit(
        'error',
        new KqError(
          `The broker blocked this connection (${reason}): publishes wait until its resource alarm clears. ` +
            `Free disk or memory on the broker.`,
        ),
      ),
    );
    if (this.isClosed) {
      await closeQuietly(connection);
      throw new ChannelClosed('The AMQP transport was closed while connecting.');
    }
    const generation = ++this.#generation;
    try {
      await this.#onConnected(connection, generation);
    } catch (error) {
      await closeQuietly(connection);
      throw error;
    }
    if (this.isClosed) {
      await closeQuietly(connection);
      throw new ChannelClosed('The AMQP transport was closed while connecting.');
    }
    this.#connection = connection;
    this.#state = 'ready';
    for (const waiter of this.#waiters) {
      clearTimeout(waiter.timer);
      waiter.resolve(connection);
    }
    this.#waiters.clear();
    this.emit('connected');
    return connection;
  }

  /** The broker connected to (or tried next). */
  get url(): AmqpUrl {
    return this.#brokers.current;
  }

  #open(): Promise<AmqplibConnection> {
    const url = this.#brokers.current;
    const options = this.#options;
    const heartbeat = options.heartbeat ?? url.heartbeat;
    const frameMax = options.frameMax ?? url.frameMax;
    const channelMax = options.channelMax ?? url.channelMax;
    const clientProperties: Record<string, unknown> = { ...options.clientProperties };
    if (options.connectionName !== undefined) clientProperties['connection_name'] = options.connectionName;
    return amqplib.connect(
      {
        // A TLS option on an amqp:// URL turns TLS on, as Kombu's broker_use_ssl does; the URL's port stays.
        protocol: options.tls ? 'amqps' : url.protocol,
        hostname: url.hostname,
        port: url.port,
        username: url.username,
        password: url.password,
        vhost: url.vhost,
        ...(heartbeat === undefined ? {} : { heartbeat }),
        ...(frameMax === undefined ? {} : { frameMax }),
        ...(channelMax === undefined ? {} : { channelMax }),
      },
      {
        ...(options.tls ?? {}),
        timeout: options.connectTimeout,
        // Confirms and RPCs are request/response: Nagle's algorithm would add up to 40 ms to each.
        noDelay: true,
        keepAlive: true,
        clientProperties,
      },
    );
  }

  #onClose(connection: AmqplibConnection, error: Error | undefined): void {
    if (connection !== this.#connection) return;
    this.#connection = undefined;
    if (this.#state === 'closed') return;
    this.#state = 'reconnecting';
    // A lost connection moves to the next broker of a URL list (a cluster's other nodes), as Kombu's failover does.
    this.#brokers.next();
    this.emit('disconnected', error ?? new ConnectionLost('The broker closed the connection.'));
    this.#reconnectAttempts = 0;
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    const policy = this.#options.reconnectPolicy;
    const attempt = ++this.#reconnectAttempts;
    if (policy.maxRetries !== undefined && attempt > policy.maxRetries) {
      this.#giveUp(
        new ConnectionLost(`Gave up reconnecting to ${this.#describeTarget()} after ${policy.maxRetries} attempts; the next operation will try again.`),
      );
      return;
    }
    this.#reconnectTimer = setTimeout(() => {
      this.#establish().then(
        () => (this.#reconnectAttempts = 0),
        (error: unknown) => {
          if (this.#state === 'closed') return;
          const failure = asConnectionLost(error, this.#describeTarget(), attempt);
          // A certificate that went bad (rotated to an untrusted, expired or misnamed one) fails every attempt alike:
          // said once, as on the first connect, and the operations waiting fail with it, rather than retried silently.
          if (failure instanceof TlsFailure) return this.#giveUp(failure);
          this.emit('error', failure);
          this.#brokers.next();
          this.#scheduleReconnect();
        },
      );
    }, retryDelay(policy, attempt));
  }

  /** Stops reconnecting: the waiting operations fail with `error`, which is reported; the next operation tries again. */
  #giveUp(error: Error): void {
    this.#state = 'idle';
    for (const waiter of this.#waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
    this.#waiters.clear();
    this.emit('error', error);
  }

  #wait(timeoutMs: number): Promise<AmqplibConnection> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, timer: undefined };
      if (Number.isFinite(timeoutMs)) {
        waiter.timer = setTimeout(() => {
          this.#waiters.delete(waiter);
          reject(
            new ConnectionLost(
              `The connection to ${this.#describeTarget()} was lost and has not come back within ${timeoutMs} ms; kq keeps reconnecting.`,
            ),
          );
        }, timeoutMs);
      }
      this.#waiters.add(waiter);
    });
  }

  #describeTarget(): string {
    const url = this.#brokers.current;
    return `${this.#options.tls ? 'amqps' : url.protocol}://${url.hostname}:${url.port}/${url.vhost === '/' ? '' : encodeURIComponent(url.vhost)}`;
  }
}

function asConnectionLost(error: unknown, target: string, attempt?: number): Error {
  if (error instanceof KqError && !(error instanceof ChannelClosed)) return error;
  if (error instanceof ChannelClosed) return error;
  // An untrusted, expired or misnamed certificate fails the same way on every attempt: said at once, not retried.
  const tlsFailure = tlsFailureOf(error, target);
  if (tlsFailure) return tlsFailure;
  const message = error instanceof Error ? error.message : String(error);
  const prefix = attempt === undefined ? `Cannot connect to ${target}` : `Reconnect attempt ${attempt} to ${target} failed`;
  // Wrong credentials or a missing vhost are not cured by retrying; say so instead of looping quietly.
  if (/ACCESS_REFUSED|403|NOT_ALLOWED|530/.test(message) && !isConnectionFailure(error)) {
    return new KqError(`${prefix}: ${message}. Check the user, password and vhost in the broker URL.`, { cause: error });
  }
  // RabbitMQ answers connection.open for a vhost that does not exist (or that the user may not use) with
  // connection.close 530, which amqplib reports only as an unexpected frame.
  if (/Expected ConnectionOpenOk; got <ConnectionClose/.test(message)) {
    return new KqError(
      `${prefix}: the broker refused to open the vhost (it does not exist, or the user has no permissions on it). ` +
        `Check the vhost in the broker URL (rabbitmqctl list_vhosts / list_permissions).`,
      { cause: error },
    );
  }
  return new ConnectionLost(`${prefix}: ${message}`, { cause: error });
}
