import {
  ConnectionLost,
  KqError,
  QueueNotFound,
  TypedEmitter,
  UnsupportedFeature,
  type Channel,
  type DeadLetterBox,
  type Queue,
  type Transport,
  type TransportCapabilities,
  type TransportDescription,
  type TransportEvents,
} from '@kq/core';
import { tolerantFieldTables, type AmqplibChannel, type AmqplibConnection } from './amqplib-loader';
import { AmqpChannel } from './amqp-channel';
import { isConnectionFailure, replyCodeOf, toKqError } from './amqp-errors';
import { BrokerAlternates } from './broker-alternates';
import { ChannelSlot } from './channel-slot';
import { closeQuietly } from './close-within';
import { ConnectionSupervisor } from './connection-supervisor';
import { AmqpCycleRegister, type AmqpCycleRegisterOptions } from './cycle-register';
import { AmqpDeadLetters } from './dead-letter-queue';
import { bindExchangeOn, bindQueueOn, declareEntry, declareExchangeOn, declareQueueOn, describeEntry } from './declarations';
import { DelayLadder, deliveryBindingKey } from './delay-ladder';
import { resolveOptions, type AmqpTransportOptions, type DelayQueueType, type ResolvedAmqpOptions } from './options';
import { AmqpBeatLease, type AmqpBeatLeaseOptions } from './single-active-consumer-lease';
import { runOnSlot } from './slot-operation';
import { Topology, type ExchangeBindingRecord, type QueueBindingRecord, type TopologyEntry } from './topology';
import type { TransportContext } from './transport-context';

/** RabbitMQ's highest priority (`x-max-priority` is capped at 255). */
export const AMQP_MAX_PRIORITY = 255;

/**
 * The AMQP 0-9-1 transport (RabbitMQ) on amqplib: a native `Channel` (no virtual emulation), publisher confirms,
 * per-consumer prefetch, consumer-cancel notifications, recovery of connection and channel loss with topology
 * re-declaration, and delayed delivery through a TTL/dead-letter ladder. Entities are declared exactly as Kombu
 * declares them, so Python Celery and kq share a vhost.
 */
export class AmqpTransport extends TypedEmitter<TransportEvents> implements Transport, TransportContext {
  readonly name = 'amqp';
  readonly capabilities: TransportCapabilities;
  readonly options: ResolvedAmqpOptions;
  /** How many brokers the URL lists (Kombu's failover list): more than one is a cluster. */
  readonly brokerCount: number;
  readonly supervisor: ConnectionSupervisor;
  readonly topology = new Topology();
  readonly ladder: DelayLadder;
  readonly #channels = new Set<AmqpChannel>();
  /** Ladder and route declarations, and re-declaring queues for resuming consumers. */
  readonly #admin: ChannelSlot;
  /** Passive declares; a 404 closes this channel and nothing else. */
  readonly #probe: ChannelSlot;
  #ladder: Promise<void> | undefined;
  #closed = false;

  constructor(url = 'amqp://guest:guest@localhost:5672//', options: AmqpTransportOptions = {}) {
    super();
    this.options = resolveOptions(options);
    const brokers = new BrokerAlternates(url, this.options.failoverStrategy);
    this.brokerCount = brokers.urls.length;
    this.ladder = new DelayLadder(this.options.delayLadderPrefix);
    this.capabilities = {
      exchangeTypes: ['direct', 'topic', 'fanout', 'headers'],
      fanout: 'queued',
      priorities: 'higher-first',
      maxPriority: AMQP_MAX_PRIORITY,
      messageTtl: true,
      deadLettering: true,
      delayedDelivery: true,
      publisherConfirms: this.options.publisherConfirms,
      crashRecovery: true,
      redeliveredFlag: true,
      // RabbitMQ puts a requeued message back in its old place.
      requeuePosition: 'head',
    };
    this.supervisor = new ConnectionSupervisor(brokers, this.options, (connection) => this.#redeclare(connection));
    this.supervisor.on('connected', () => this.emit('connected'));
    this.supervisor.on('disconnected', (error) => this.emit('disconnected', error));
    this.supervisor.on('error', (error) => this.emit('error', error));
    this.#admin = new ChannelSlot(this.supervisor, 'plain');
    this.#probe = new ChannelSlot(this.supervisor, 'plain');
  }

  get isConnected(): boolean {
    return this.supervisor.isConnected;
  }

  /**
   * False only if amqplib was imported before `@kq/amqp` in this process: then a Python header holding an integer
   * beyond 32 bits closes the connection (see `field-table-decoder.ts`). Import `@kq/amqp` first.
   */
  get tolerantFieldTables(): boolean {
    return tolerantFieldTables;
  }

  async connect(): Promise<void> {
    await this.supervisor.connection();
  }

  async createChannel(): Promise<Channel> {
    if (this.#closed) throw new KqError('This AMQP transport is closed; create a new one.');
    await this.connect();
    const channel = new AmqpChannel(this);
    this.#channels.add(channel);
    return channel;
  }

  /** The dead-letter queues your task queues dead-letter to, for `kq dlq` (name one with `-Q`). */
  deadLetters(): DeadLetterBox {
    return new AmqpDeadLetters(() => this.createChannel());
  }

  /** kq beat's lease on this RabbitMQ: a single-active-consumer queue holding the schedule's state (see `AmqpBeatLease`). */
  beatLease(options: AmqpBeatLeaseOptions): AmqpBeatLease {
    return new AmqpBeatLease(this, options);
  }

  /** Periodic-task registers in this RabbitMQ, each a queue under a broker-side mutex (see `AmqpCycleRegister`). */
  cycleRegister(options?: AmqpCycleRegisterOptions): AmqpCycleRegister {
    return new AmqpCycleRegister(this, options);
  }

  describe(): TransportDescription {
    return {
      transport: 'amqp',
      hostname: this.supervisor.url.hostname,
      port: this.supervisor.url.port,
      virtualHost: this.supervisor.url.vhost,
      userid: this.supervisor.url.username,
      ssl: this.supervisor.url.protocol === 'amqps' || this.options.tls !== undefined,
      // amqplib logs in with PLAIN (its default credentials), the mechanism py-amqp negotiates with RabbitMQ too.
      loginMethod: 'PLAIN',
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#channels].map((channel) => channel.close()));
    await Promise.all([this.#admin.close(), this.#probe.close()]);
    await this.supervisor.close();
  }

  /**
   * Drops the connection at once, as a crashed process would: no closing handshake, no waiting for confirms, no
   * reconnect. The broker requeues whatever this transport's consumers held; unconfirmed publishes fail with
   * `ConnectionLost`. For tests of crash recovery, and for emergency stops.
   */
  terminate(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.supervisor.terminate();
    for (const channel of [...this.#channels]) channel.terminate();
    void this.#admin.close();
    void this.#probe.close();
  }

  // ——— TransportContext ———

  async queueExists(queue: string): Promise<boolean> {
    return (await this.queueDepth(queue)) !== undefined;
  }

  async queueDepth(queue: string): Promise<number | undefined> {
    try {
      const reply = await runOnSlot(this.#probe, { operation: `check queue ${JSON.stringify(queue)}`, queue }, this.options.recoveryTimeout, (channel) =>
        channel.checkQueue(queue),
      );
      return reply.messageCount;
    } catch (error) {
      if (error instanceof QueueNotFound) return undefined;
      throw error;
    }
  }

  async redeclareQueue(name: string): Promise<boolean> {
    const queue = this.topology.queue(name);
    if (!queue) return false;
    const entries: TopologyEntry[] = [{ kind: 'queue', queue }, ...this.topology.bindingsOf(name).map((binding) => ({ kind: 'queueBinding', binding }) as const)];
    for (const entry of entries) {
      await this.#adminOp(describeEntry(entry), (channel) => declareEntry(channel, entry));
    }
    return true;
  }

  /**
   * Declares the delay ladder now rather than on the first delayed publish (which otherwise pays for ~120
   * declarations once). Idempotent.
   */
  declareDelayLadder(): Promise<void> {
    this.#ladder ??= this.#declareLadder().catch((error: unknown) => {
      this.#ladder = undefined;
      throw error;
    });
    return this.#ladder;
  }

  /**
   * Declares the ladder (once) and what hands a due message for `exchange`/`routingKey` to its queues: Kombu's
   * `#.<key>` bindings from `celery_delayed_delivery` (see `delay-ladder.ts`).
   */
  async ensureDelayRoute(exchange: string, routingKey: string, queues?: readonly string[]): Promise<void> {
    await this.declareDelayLadder();
    const key = deliveryBindingKey(routingKey);
    const delivery = this.ladder.deliveryExchange;
    const type = exchange === '' ? 'default' : (this.topology.exchange(exchange)?.type ?? 'topic');
    if (type === 'default' || type === 'direct') {
      // Kombu skips direct exchanges (a Celery sender then holds the message in a worker instead); kq binds the
      // queues themselves to the delivery exchange, which routes by the same key.
      const targets = type === 'default' ? [routingKey] : (queues ?? this.topology.queuesBoundTo(exchange, routingKey));
      if (targets.length === 0) {
        throw new UnsupportedFeature(
          `Cannot delay a message for direct exchange ${JSON.stringify(exchange)} with routing key ${JSON.stringify(routingKey)}: no queue bound ` +
            'with that key was declared through this connection. Declare the target queue first, or use a topic exchange.',
        );
      }
      for (const queue of targets) await this.#bindDelayed({ queue, exchange: delivery, routingKey: key, arguments: {} });
      return;
    }
    await this.#bindDelayedExchange({ destination: exchange, source: delivery, routingKey: key, arguments: {} });
    // A topic exchange routes by the delayed key, so its queues also need `#.<their binding key>` (as Kombu binds
    // them): the digits are words in front of the real key.
    if (type === 'topic') {
      const bound = queues ? queues.map((queue) => ({ queue, routingKey })) : this.topology.bindingsOn(exchange);
      for (const binding of bound) {
        await this.#bindDelayed({ queue: binding.queue, exchange, routingKey: deliveryBindingKey(binding.routingKey), arguments: {} });
      }
    }
  }

  /**
   * What Celery 5.5+'s DelayedDelivery worker step does at start-up: declares the ladder and binds each queue's
   * exchange (and the queue) to `celery_delayed_delivery` with `#.<key>`, so delayed messages any client put in the
   * ladder for these queues reach them. Queues on a direct or the default exchange are bound directly.
   */
  async prepareDelayedDelivery(queues: readonly Queue[]): Promise<void> {
    for (const queue of queues) {
      if (queue.bindings.length === 0) await this.ensureDelayRoute('', queue.name);
      for (const binding of queue.bindings) await this.ensureDelayRoute(binding.exchange.name, binding.routingKey || queue.name, [queue.name]);
    }
  }

  async #bindDelayed(record: QueueBindingRecord): Promise<void> {
    if (this.topology.hasQueueBinding(record)) return;
    await this.#adminOp(`route delayed messages to queue ${JSON.stringify(record.queue)}`, (channel) => bindQueueOn(channel, record), { queue: record.queue });
    this.topology.addQueueBinding(record);
  }

  async #bindDelayedExchange(record: ExchangeBindingRecord): Promise<void> {
    if (this.topology.hasExchangeBinding(record)) return;
    await this.#adminOp(`route delayed messages to exchange ${JSON.stringify(record.destination)}`, (channel) => bindExchangeOn(channel, record), {
      exchange: record.destination,
    });
    this.topology.addExchangeBinding(record);
  }

  channelClosed(channel: object): void {
    this.#channels.delete(channel as AmqpChannel);
  }

  /**
   * Deletes this transport's delay ladder (queues, exchanges) — and every delayed message waiting in it. For
   * tests and uninstalling; the next delayed publish declares it again.
   */
  async deleteDelayLadder(): Promise<void> {
    const ladder = this.#ladder;
    this.#ladder = undefined;
    await ladder?.catch(() => undefined);
    const { exchanges, queues } = this.ladder.entities('classic');
    for (const queue of queues) {
      await this.#adminOp(`delete delay-ladder queue ${JSON.stringify(queue.name)}`, (channel) => channel.deleteQueue(queue.name));
      this.topology.removeQueue(queue.name);
    }
    for (const exchange of exchanges) {
      await this.#adminOp(`delete delay-ladder exchange ${JSON.stringify(exchange.name)}`, (channel) => channel.deleteExchange(exchange.name));
      this.topology.removeExchange(exchange.name);
    }
  }

  // ——— internals ———

  /** The delay ladder (see `delay-ladder.ts`), declared once and then kept in the topology like everything else. */
  async #declareLadder(): Promise<void> {
    await this.connect();
    const type: DelayQueueType = this.options.delayQueueType ?? (supportsQuorumTtl(this.supervisor.serverVersion) ? 'quorum' : 'classic');
    const { exchanges, queues, queueBindings, exchangeBindings } = this.ladder.entities(type);
    for (const exchange of exchanges) {
      await this.#adminOp(`declare delay-ladder exchange ${JSON.stringify(exchange.name)}`, (channel) => declareExchangeOn(channel, exchange));
      this.topology.addExchange(exchange);
    }
    for (const queue of queues) {
      await this.#adminOp(`declare delay-ladder queue ${JSON.stringify(queue.name)}`, (channel) => declareQueueOn(channel, queue));
      this.topology.addQueue(queue);
    }
    for (const record of queueBindings) {
      await this.#adminOp(`bind delay-ladder queue ${JSON.stringify(record.queue)}`, (channel) => bindQueueOn(channel, record));
      this.topology.addQueueBinding(record);
    }
    for (const binding of exchangeBindings) {
      await this.#adminOp(`bind delay-ladder exchange ${JSON.stringify(binding.destination)}`, (channel) => bindExchangeOn(channel, binding));
      this.topology.addExchangeBinding(binding);
    }
  }

  #adminOp<T>(operation: string, run: (channel: AmqplibChannel) => Promise<T>, names: { queue?: string; exchange?: string } = {}): Promise<T> {
    return runOnSlot(this.#admin, { operation, ...names }, this.options.recoveryTimeout, run, () => !this.#closed);
  }

  /**
   * After every (re)connect, before channels resume: declare again everything declared through this transport.
   * An entity the broker now refuses (someone re-declared it differently, a bound exchange is gone) is reported
   * and skipped; a connection failure aborts, and the supervisor tries the whole connect again.
   */
  async #redeclare(connection: AmqplibConnection): Promise<void> {
    const entries = this.topology.entries();
    if (entries.length === 0) return;
    let channel = await openQuietChannel(connection);
    for (const entry of entries) {
      try {
        await declareEntry(channel, entry);
      } catch (error) {
        if (replyCodeOf(error) === undefined && isConnectionFailure(error)) throw new ConnectionLost(`Re-declaring the topology failed: ${String(error)}`, { cause: error });
        this.emit('error', toKqError(error, { operation: `${describeEntry(entry)} again after reconnecting` }));
        channel = await openQuietChannel(connection);
      }
    }
    await closeQuietly(channel);
  }
}

async function openQuietChannel(connection: AmqplibConnection): Promise<AmqplibChannel> {
  const channel = await connection.createChannel();
  // A refused declaration closes the channel with an 'error' event; the caller sees the failed RPC instead.
  channel.on('error', () => undefined);
  return channel;
}

/** Quorum queues support message TTL and at-least-once dead-lettering from RabbitMQ 3.10. */
export function supportsQuorumTtl(version: string | undefined): boolean {
  const match = /^(\d+)\.(\d+)/.exec(version ?? '');
  if (!match) return false;
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return major > 3 || (major === 3 && minor >= 10);
}
