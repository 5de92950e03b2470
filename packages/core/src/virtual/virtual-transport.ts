import { UnsupportedFeature } from '../errors';
import type { Exchange } from '../exchange';
import type { Queue } from '../queue';
import type { Channel, TransportCapabilities, TransportDescription, TransportEvents, Transport } from '../transport';
import { TypedEmitter } from '../typed-emitter';
import { DEFAULT_PRIORITY_STEPS, VIRTUAL_MAX_PRIORITY, priorityStep } from './priority-steps';
import { VirtualChannel } from './virtual-channel';
import type { FanoutBinding, VirtualChannelHost } from './virtual-channel-host';
import type { FanoutBus, VirtualStore } from './virtual-store';

export interface VirtualTransportOptions {
  /** Priority buckets (Kombu's `priority_steps`); must match every peer sharing the store. */
  prioritySteps?: readonly number[];
  /** Longest a consumer waits in one `claim` before looping (Kombu's `brpop_timeout`). Default 1000 ms. */
  pollIntervalMs?: number;
  /** Most messages one consumer claims per round trip. Default 64. */
  batchSize?: number;
  /** Called for messages that matched no queue and were dropped (Kombu warns with UndeliverableWarning). */
  onUnroutable?: (exchange: string, routingKey: string) => void;
}

/**
 * Base class of every store-backed transport (memory, Redis, a user's custom store). It owns what is per process
 * in Kombu's virtual transport — the exchange table, local queue declarations, fanout subscriptions, consumer
 * counts — and makes `VirtualChannel`s over the store.
 */
export abstract class VirtualTransport extends TypedEmitter<TransportEvents> implements Transport, VirtualChannelHost {
  abstract readonly name: string;
  readonly store: VirtualStore;
  readonly capabilities: TransportCapabilities;
  readonly pollIntervalMs: number;
  readonly batchSize: number;
  readonly #steps: readonly number[];
  readonly #onUnroutable: ((exchange: string, routingKey: string) => void) | undefined;
  readonly #exchanges = new Map<string, Exchange>();
  readonly #queues = new Map<string, Queue>();
  readonly #fanout = new Map<string, FanoutBinding[]>();
  readonly #consumerCounts = new Map<string, number>();
  readonly #channels = new Set<VirtualChannel>();
  #connecting: Promise<void> | undefined;
  #connected = false;

  protected constructor(store: VirtualStore, options: VirtualTransportOptions = {}, capabilities?: Partial<TransportCapabilities>) {
    super();
    this.store = store;
    this.#steps = options.prioritySteps ?? DEFAULT_PRIORITY_STEPS;
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.batchSize = Math.max(1, options.batchSize ?? 64);
    this.#onUnroutable = options.onUnroutable;
    this.capabilities = {
      exchangeTypes: ['direct', 'topic', 'fanout', 'headers'],
      fanout: store.features.fanout,
      priorities: store.features.priorities ? 'lower-first' : null,
      prioritiesAcrossQueues: store.features.priorities,
      maxPriority: VIRTUAL_MAX_PRIORITY,
      messageTtl: false,
      deadLettering: true,
      delayedDelivery: store.features.delayedDelivery,
      publisherConfirms: true,
      crashRecovery: store.features.crashRecovery,
      // VirtualChannel restores a requeued claim to the tail, as Kombu's virtual channels do.
      requeuePosition: 'tail',
      ...capabilities,
    };
  }

  get isConnected(): boolean {
    return this.#connected;
  }

  connect(): Promise<void> {
    this.#connecting ??= this.store.open().then(
      () => {
        this.#connected = true;
        this.emit('connected');
      },
      (error: unknown) => {
        this.#connecting = undefined;
        throw error;
      },
    );
    return this.#connecting;
  }

  async createChannel(): Promise<Channel> {
    await this.connect();
    const channel = this.newChannel();
    this.#channels.add(channel);
    return channel;
  }

  /** The channel `createChannel` opens: a subclass returns its own to add what its broker offers (`countDelayed`). */
  protected newChannel(): VirtualChannel {
    return new VirtualChannel(this);
  }

  abstract describe(): TransportDescription;

  async close(): Promise<void> {
    await Promise.all([...this.#channels].map((channel) => channel.close()));
    if (this.#connected || this.#connecting) {
      this.#connecting = undefined;
      this.#connected = false;
      await this.store.close();
    }
  }

  // ——— used by VirtualChannel ———

  priorityStep(priority: unknown): number {
    return this.store.features.priorities ? priorityStep(priority, this.#steps) : 0;
  }

  async findExchange(name: string): Promise<Exchange | undefined> {
    const local = this.#exchanges.get(name);
    if (local) return local;
    const remote = await this.store.lookupExchange?.(name);
    if (remote) this.#exchanges.set(name, remote);
    return remote;
  }

  async rememberExchange(exchange: Exchange): Promise<void> {
    if (this.#exchanges.has(exchange.name)) return;
    await this.store.declareExchange?.(exchange);
    this.#exchanges.set(exchange.name, exchange);
  }

  async forgetExchange(name: string): Promise<void> {
    this.#exchanges.delete(name);
    await this.store.deleteExchange?.(name);
  }

  declaredQueue(name: string): Queue | undefined {
    return this.#queues.get(name);
  }

  rememberQueue(queue: Queue): void {
    this.#queues.set(queue.name, queue);
  }

  forgetQueue(name: string): void {
    this.#queues.delete(name);
    this.#fanout.delete(name);
  }

  async queueDeclaration(name: string): Promise<Queue | undefined> {
    return this.#queues.get(name) ?? (await this.store.lookupQueue?.(name));
  }

  noteFanoutBinding(queue: string, exchange: string, routingKey: string): void {
    if (this.store.features.fanout !== 'live') return;
    const bindings = this.#fanout.get(queue) ?? [];
    if (!bindings.some((b) => b.exchange === exchange && b.routingKey === routingKey)) bindings.push({ exchange, routingKey });
    this.#fanout.set(queue, bindings);
  }

  dropFanoutBinding(queue: string, exchange: string, routingKey: string): void {
    const bindings = this.#fanout.get(queue)?.filter((b) => !(b.exchange === exchange && b.routingKey === routingKey));
    if (bindings && bindings.length > 0) this.#fanout.set(queue, bindings);
    else this.#fanout.delete(queue);
  }

  /** Queues bound to a live fanout exchange are read from the bus only (as Kombu reads them over PUB/SUB). */
  isLiveFanoutQueue(queue: string): boolean {
    return this.#fanout.has(queue);
  }

  liveFanoutBindings(queue: string): readonly FanoutBinding[] {
    return this.#fanout.get(queue) ?? [];
  }

  fanoutBus(): FanoutBus {
    const bus = this.store.fanoutBus;
    if (!bus) throw new UnsupportedFeature(`The ${this.name} store declares live fanout but has no fanoutBus.`);
    return bus;
  }

  countConsumers(queues: readonly string[], delta: number): void {
    for (const queue of queues) {
      const next = (this.#consumerCounts.get(queue) ?? 0) + delta;
      if (next > 0) this.#consumerCounts.set(queue, next);
      else this.#consumerCounts.delete(queue);
    }
  }

  consumerCount(queue: string): number {
    return this.#consumerCounts.get(queue) ?? 0;
  }

  reportUnroutable(exchange: string, routingKey: string): void {
    this.#onUnroutable?.(exchange, routingKey);
  }

  channelClosed(channel: VirtualChannel): void {
    this.#channels.delete(channel);
  }
}
