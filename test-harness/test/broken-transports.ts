import {
  MemoryTransport,
  TypedEmitter,
  type Channel,
  type ChannelEvents,
  type ConsumeOptions,
  type ConsumerHandle,
  type DecodeOptions,
  type Delivery,
  type DeliveryInfo,
  type DeliveryState,
  type Exchange,
  type GetOptions,
  type OutgoingMessage,
  type PublishOptions,
  type Queue,
  type QueueStats,
  type Transport,
  type TransportCapabilities,
  type TransportDescription,
  type TransportEvents,
} from '@kq/core';

/** How a broken transport deviates from the one it wraps. Every hook defaults to passing straight through. */
export interface Sabotage {
  /** Replaces a publish; `publishNumber` counts publishes on this transport from 1. */
  publish?(forward: () => Promise<void>, publishNumber: number): Promise<void>;
  consumeOptions?(options: ConsumeOptions): ConsumeOptions;
  /** Replaces the handle the consumer gets back (to lie about its prefetch, say). */
  consumerHandle?(inner: ConsumerHandle, requested: ConsumeOptions): ConsumerHandle;
  delivery?(delivery: Delivery): Delivery;
}

/** Shared by every transport of the self-tests; entity names are unique per check anyway. */
export const SELF_TEST_BROKER = 'kq-harness-self-test';

/** A `MemoryTransport` with a deliberate defect, built by wrapping its channels. */
export class SabotagedTransport extends TypedEmitter<TransportEvents> implements Transport {
  readonly name = 'sabotaged-memory';
  readonly #inner: Transport;
  readonly #sabotage: Sabotage;
  #publishes = 0;

  constructor(sabotage: Sabotage) {
    super();
    this.#inner = new MemoryTransport({ broker: SELF_TEST_BROKER, pollIntervalMs: 200 });
    this.#sabotage = sabotage;
    this.#inner.on('error', (error) => this.emit('error', error));
  }

  get capabilities(): TransportCapabilities {
    return this.#inner.capabilities;
  }

  get isConnected(): boolean {
    return this.#inner.isConnected;
  }

  connect(): Promise<void> {
    return this.#inner.connect();
  }

  async createChannel(): Promise<Channel> {
    return new SabotagedChannel(await this.#inner.createChannel(), this.#sabotage, () => ++this.#publishes);
  }

  describe(): TransportDescription {
    return this.#inner.describe();
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

class SabotagedChannel extends TypedEmitter<ChannelEvents> implements Channel {
  readonly #inner: Channel;
  readonly #sabotage: Sabotage;
  readonly #nextPublish: () => number;

  constructor(inner: Channel, sabotage: Sabotage, nextPublish: () => number) {
    super();
    this.#inner = inner;
    this.#sabotage = sabotage;
    this.#nextPublish = nextPublish;
    inner.on('error', (error) => this.emit('error', error));
    inner.on('close', (error) => this.emit('close', error));
  }

  get isOpen(): boolean {
    return this.#inner.isOpen;
  }

  declareExchange(exchange: Exchange): Promise<void> {
    return this.#inner.declareExchange(exchange);
  }

  deleteExchange(name: string): Promise<void> {
    return this.#inner.deleteExchange(name);
  }

  declareQueue(queue: Queue): Promise<QueueStats> {
    return this.#inner.declareQueue(queue);
  }

  checkQueue(name: string): Promise<QueueStats> {
    return this.#inner.checkQueue(name);
  }

  bindQueue(queue: string, exchange: string, routingKey: string, args?: Record<string, unknown>): Promise<void> {
    return this.#inner.bindQueue(queue, exchange, routingKey, args);
  }

  unbindQueue(queue: string, exchange: string, routingKey: string, args?: Record<string, unknown>): Promise<void> {
    return this.#inner.unbindQueue(queue, exchange, routingKey, args);
  }

  deleteQueue(name: string): Promise<number> {
    return this.#inner.deleteQueue(name);
  }

  purgeQueue(name: string): Promise<number> {
    return this.#inner.purgeQueue(name);
  }

  publish(exchange: string, routingKey: string, message: OutgoingMessage, options?: PublishOptions): Promise<void> {
    const forward = (): Promise<void> => this.#inner.publish(exchange, routingKey, message, options);
    return this.#sabotage.publish ? this.#sabotage.publish(forward, this.#nextPublish()) : forward();
  }

  async get(queue: string, options?: GetOptions): Promise<Delivery | null> {
    const delivery = await this.#inner.get(queue, options);
    return delivery && this.#sabotage.delivery ? this.#sabotage.delivery(delivery) : delivery;
  }

  async consume(options: ConsumeOptions): Promise<ConsumerHandle> {
    const adjusted = this.#sabotage.consumeOptions?.(options) ?? options;
    const alter = this.#sabotage.delivery;
    const handle = await this.#inner.consume(
      alter ? { ...adjusted, onMessage: (delivery) => adjusted.onMessage(alter(delivery)) } : adjusted,
    );
    return this.#sabotage.consumerHandle?.(handle, options) ?? handle;
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

/** A delivery that reports `redelivered: false` whatever happened before. */
class AmnesiacDelivery implements Delivery {
  readonly #inner: Delivery;
  readonly deliveryInfo: DeliveryInfo;

  constructor(inner: Delivery) {
    this.#inner = inner;
    this.deliveryInfo = { ...inner.deliveryInfo, redelivered: false };
  }

  get body(): Buffer {
    return this.#inner.body;
  }
  get contentType(): string {
    return this.#inner.contentType;
  }
  get contentEncoding(): string {
    return this.#inner.contentEncoding;
  }
  get headers(): Delivery['headers'] {
    return this.#inner.headers;
  }
  get properties(): Delivery['properties'] {
    return this.#inner.properties;
  }
  get state(): DeliveryState {
    return this.#inner.state;
  }
  get acknowledged(): boolean {
    return this.#inner.acknowledged;
  }
  get noAck(): boolean {
    return this.#inner.noAck;
  }
  get stale(): boolean {
    return this.#inner.stale;
  }
  ack(): Promise<void> {
    return this.#inner.ack();
  }
  reject(reason?: string): Promise<void> {
    return this.#inner.reject(reason);
  }
  requeue(): Promise<void> {
    return this.#inner.requeue();
  }
  decode<T = unknown>(options?: DecodeOptions): T {
    return this.#inner.decode<T>(options);
  }
}

/** Loses every 100th message it is asked to publish, while reporting success. */
export const dropsEveryHundredth: Sabotage = {
  publish: (forward, publishNumber) => (publishNumber % 100 === 0 ? Promise.resolve() : forward()),
};

/** Consumes without any prefetch limit, whatever the consumer asked for — and claims to honour it. */
export const ignoresPrefetch: Sabotage = {
  consumeOptions: (options) => ({ ...options, prefetch: 0 }),
  consumerHandle: (inner, requested) => {
    let claimed = requested.prefetch ?? 0;
    return {
      tag: inner.tag,
      queues: inner.queues,
      get prefetch() {
        return claimed;
      },
      setPrefetch: async (count) => {
        claimed = count;
      },
      cancel: () => inner.cancel(),
    };
  },
};

/** Never tells a consumer that a message was delivered before. */
export const neverSetsRedelivered: Sabotage = {
  delivery: (delivery) => new AmnesiacDelivery(delivery),
};

/** Stores the 7th message it publishes twice. */
export const duplicatesAMessage: Sabotage = {
  publish: async (forward, publishNumber) => {
    await forward();
    if (publishNumber === 7) await forward();
  },
};

/** Changes nothing: the control that shows the wrapper alone breaks no check. */
export const noSabotage: Sabotage = {};
