import { MessageStateError } from './errors';
import { defaultSerializers, type SerializerRegistry } from './serialization/serializer-registry';

/** Application headers: JSON-compatible values (AMQP field tables, Kombu's Redis envelope `headers`). */
export type Headers = Record<string, unknown>;

/** 1 = transient, 2 = persistent (AMQP `delivery_mode`). */
export type DeliveryMode = 1 | 2;

/** The AMQP basic properties Kombu carries, in camelCase. Transports map them to their wire names. */
export interface MessageProperties {
  correlationId?: string;
  replyTo?: string;
  deliveryMode?: DeliveryMode;
  /** 0–255 on AMQP; 0–9 on virtual transports (see `TransportCapabilities.priorities` for the direction). */
  priority?: number;
  /** Per-message TTL in milliseconds, as a decimal string (AMQP's type for it). */
  expiration?: string;
  messageId?: string;
  /** Seconds since the epoch. */
  timestamp?: number;
  type?: string;
  userId?: string;
  appId?: string;
}

/** A message ready to publish: serialized body plus everything that travels with it. */
export interface OutgoingMessage {
  body: Buffer;
  contentType: string;
  contentEncoding: string;
  headers: Headers;
  properties: MessageProperties;
}

export interface DeliveryInfo {
  /** The exchange the message was published to (`''` for the default exchange). */
  exchange: string;
  routingKey: string;
  /** The queue it was taken from. */
  queue: string;
  /** True when the message was delivered before and was not acknowledged (restored, requeued, recovered). */
  redelivered: boolean;
  /** Identifies this message to the channel that delivered it. */
  deliveryTag: string;
  consumerTag?: string;
  /**
   * How many times the message was delivered before this delivery, where the broker counts it
   * (RabbitMQ `x-delivery-count` on quorum queues, `x-death` counts after dead-lettering).
   */
  deliveryCount?: number;
}

export type DeliveryState = 'received' | 'acked' | 'rejected' | 'requeued';

export interface DecodeOptions {
  /** Content types (or serializer names) the caller accepts; anything else raises `ContentDisallowed` undecoded. */
  accept?: readonly string[];
  serializers?: SerializerRegistry;
  /** Most bytes a compressed body may inflate to (`maxMessageSize`); past it, `MessageTooLarge`. */
  maxDecompressedSize?: number;
}

/** A received message. Exactly one of `ack()`, `reject()` or `requeue()` may be called, once. */
export interface Delivery extends OutgoingMessage {
  readonly deliveryInfo: DeliveryInfo;
  readonly state: DeliveryState;
  /** True once the message has been settled (or was consumed with `noAck`). */
  readonly acknowledged: boolean;
  /** True when the consumer asked for `noAck`: the broker forgot the message when it was delivered. */
  readonly noAck: boolean;
  /**
   * True when this delivery can no longer be settled although nobody settled it: its channel closed or its claim was
   * taken back, so the broker gives the message to a consumer again. Work not started for it must not start.
   */
  readonly stale: boolean;
  /** Remove the message from the queue for good. */
  ack(): Promise<void>;
  /**
   * Refuse the message without requeueing it: dead-lettered where the queue has a dead-letter exchange, else kept
   * by stores that keep rejected messages (Redis: `kq dlq list`), else dropped. `reason` is kept with it there.
   */
  reject(reason?: string): Promise<void>;
  /** Refuse the message and put it back on its queue; it is delivered again with `redelivered` set. */
  requeue(): Promise<void>;
  /** Deserialize the body according to its content type (and `compression` header). */
  decode<T = unknown>(options?: DecodeOptions): T;
}

export interface DeliveryInit extends OutgoingMessage {
  deliveryInfo: DeliveryInfo;
  noAck?: boolean;
}

type SettleAction = 'ack' | 'reject' | 'requeue';

/**
 * The state machine every transport's deliveries share: a delivery is settled at most once, and a second settle is
 * a `MessageStateError` instead of a double ack that a broker would punish by closing the channel.
 * Transports implement `settle()`.
 */
export abstract class BaseDelivery implements Delivery {
  readonly body: Buffer;
  readonly contentType: string;
  readonly contentEncoding: string;
  readonly headers: Headers;
  readonly properties: MessageProperties;
  readonly deliveryInfo: DeliveryInfo;
  readonly noAck: boolean;
  #state: DeliveryState = 'received';

  constructor(init: DeliveryInit) {
    this.body = init.body;
    this.contentType = init.contentType;
    this.contentEncoding = init.contentEncoding;
    this.headers = init.headers;
    this.properties = init.properties;
    this.deliveryInfo = init.deliveryInfo;
    this.noAck = init.noAck ?? false;
    if (this.noAck) this.#state = 'acked';
  }

  get state(): DeliveryState {
    return this.#state;
  }

  get acknowledged(): boolean {
    return this.#state !== 'received';
  }

  get stale(): boolean {
    return this.#state === 'received' && !this.noAck && this.isStale();
  }

  /** Whether the transport no longer holds this unsettled delivery (channel gone, claim lost). */
  protected isStale(): boolean {
    return false;
  }

  ack(): Promise<void> {
    return this.#settle('ack', 'acked');
  }

  reject(reason?: string): Promise<void> {
    return this.#settle('reject', 'rejected', reason);
  }

  requeue(): Promise<void> {
    return this.#settle('requeue', 'requeued');
  }

  decode<T = unknown>(options: DecodeOptions = {}): T {
    const serializers = options.serializers ?? defaultSerializers;
    const compression = typeof this.headers['compression'] === 'string' ? this.headers['compression'] : undefined;
    return serializers.decode(
      { body: this.body, contentType: this.contentType, contentEncoding: this.contentEncoding, compression },
      {
        ...(options.accept ? { accept: options.accept } : {}),
        ...(options.maxDecompressedSize === undefined ? {} : { maxDecompressedSize: options.maxDecompressedSize }),
      },
    ) as T;
  }

  /** `reason` comes with a reject only. */
  protected abstract settle(action: SettleAction, reason?: string): Promise<void>;

  // Not async: every message is settled once, and the transport's promise is handed back as it is.
  #settle(action: SettleAction, next: DeliveryState, reason?: string): Promise<void> {
    if (this.#state !== 'received') {
      const why = this.noAck ? 'it was consumed with noAck, so the broker already forgot it' : `it is already ${this.#state}`;
      return Promise.reject(
        new MessageStateError(`Cannot ${action} message ${this.deliveryInfo.deliveryTag}: ${why}. Settle each delivery exactly once.`),
      );
    }
    // The state moves before the round trip so a concurrent second call fails fast instead of double-settling.
    this.#state = next;
    try {
      return this.settle(action, reason);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
