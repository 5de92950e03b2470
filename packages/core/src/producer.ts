import type { Connection, Entity } from './connection';
import { Exchange } from './exchange';
import type { DeliveryMode, Headers, MessageProperties, OutgoingMessage } from './message';
import { assertMessageSize } from './message-size';
import type { RetryPolicy } from './retry-policy';
import { compress } from './serialization/compression';
import { defaultSerializers, type SerializerRegistry } from './serialization/serializer-registry';
import type { Channel, PublishOptions } from './transport';

export interface ProducerOptions {
  /** Default exchange for `publish` (default: the default exchange `''`). */
  exchange?: Exchange | string;
  /** Default routing key. */
  routingKey?: string;
  /** Default serializer name (`json`). */
  serializer?: string;
  /** Default compression (`zlib`, `brotli`, or a content type); none by default. */
  compression?: string;
  /** Declare the producer's exchange before the first publish (Kombu's `auto_declare`). Default true. */
  autoDeclare?: boolean;
  serializers?: SerializerRegistry;
  /** Default delivery mode (2 = persistent). */
  deliveryMode?: DeliveryMode;
}

export interface PublishParams extends Omit<MessageProperties, 'expiration'> {
  exchange?: Exchange | string;
  routingKey?: string;
  headers?: Headers;
  serializer?: string;
  /** For pre-serialized `Buffer` bodies: their content type and encoding. */
  contentType?: string;
  contentEncoding?: string;
  compression?: string;
  /** Per-message TTL in milliseconds. */
  expiration?: number;
  mandatory?: boolean;
  /** Hold the message in the broker this many milliseconds (transports with `delayedDelivery`). */
  delay?: number;
  /** Entities to declare first (once per connection). */
  declare?: readonly Entity[];
  /** Retry recoverable failures (default true) by `retryPolicy`. */
  retry?: boolean;
  retryPolicy?: RetryPolicy;
}

/** What `publishMessage` and `publishMessages` take: where to, what to declare first, how to retry. */
export type MessagePublishParams = Pick<PublishParams, 'exchange' | 'routingKey' | 'declare' | 'mandatory' | 'delay' | 'retry' | 'retryPolicy'>;

type Deliver = (channel: Channel, exchange: string, routingKey: string, options: PublishOptions) => Promise<void>;

/** Publishes messages, Kombu-style: serialize, compress, declare what is needed, publish with retries. */
export class Producer {
  readonly connection: Connection;
  readonly exchange: Exchange;
  readonly routingKey: string;
  readonly #options: ProducerOptions;
  readonly #serializers: SerializerRegistry;

  constructor(connection: Connection, options: ProducerOptions = {}) {
    this.connection = connection;
    this.#options = options;
    this.exchange = toExchange(options.exchange);
    this.routingKey = options.routingKey ?? '';
    this.#serializers = options.serializers ?? defaultSerializers;
  }

  /** Serializes `body` and publishes it. Resolves once the transport has the message. */
  async publish(body: unknown, params: PublishParams = {}): Promise<void> {
    const exchange = params.exchange === undefined ? this.exchange : toExchange(params.exchange);
    const routingKey = params.routingKey ?? this.routingKey;
    const message = this.prepare(body, params, exchange);
    const declare = [...(params.declare ?? [])];
    if (exchange.name !== '' && (this.#options.autoDeclare ?? true)) declare.unshift(exchange);
    return this.publishMessage(message, { ...params, exchange, routingKey, declare });
  }

  /**
   * Publishes an already-built message (a Celery task message, say), declaring `declare` first and retrying
   * recoverable failures unless `retry: false`. A body over the connection's `maxMessageSize` is refused with
   * `MessageTooLarge` before anything is sent.
   */
  async publishMessage(message: OutgoingMessage, params: MessagePublishParams = {}): Promise<void> {
    assertMessageSize(message.body, this.connection.maxMessageSize);
    return this.#send(params, (channel, exchange, routingKey, options) => channel.publish(exchange, routingKey, message, options));
  }

  /**
   * Publishes already-built messages bound for the same exchange and routing key — the bulk path: one batch where
   * the channel has one (`Channel.publishBatch`: one `LPUSH` on Redis), else all published together. A recoverable
   * failure retries the whole batch, so a message may be stored twice (at-least-once), never lost.
   */
  async publishMessages(messages: readonly OutgoingMessage[], params: MessagePublishParams = {}): Promise<void> {
    if (messages.length === 0) return;
    // All or none: one oversize message refuses the batch before any of it is sent.
    for (const message of messages) assertMessageSize(message.body, this.connection.maxMessageSize);
    return this.#send(params, async (channel, exchange, routingKey, options) => {
      if (channel.publishBatch) return channel.publishBatch(exchange, routingKey, messages, options);
      await Promise.all(messages.map((message) => channel.publish(exchange, routingKey, message, options)));
    });
  }

  #send(params: MessagePublishParams, deliver: Deliver): Promise<void> {
    const exchange = params.exchange === undefined ? this.exchange : toExchange(params.exchange);
    const routingKey = params.routingKey ?? this.routingKey;
    const declare = params.declare ?? [];
    const options: PublishOptions = {};
    if (params.mandatory !== undefined) options.mandatory = params.mandatory;
    if (params.delay !== undefined && params.delay > 0) options.delay = params.delay;
    const connection = this.connection;
    const publish = (channel: Channel): Promise<void> => {
      // Declared entities are checked synchronously: a publish to a known queue goes straight to the channel.
      for (const entity of declare) {
        if (!connection.hasDeclared(entity)) return this.#declareThenDeliver(declare, deliver, exchange.name, routingKey, options);
      }
      return deliver(channel, exchange.name, routingKey, options);
    };
    if (params.retry === false) return connection.channel().then(publish);
    return connection.ensure(publish, params.retryPolicy);
  }

  async #declareThenDeliver(
    declare: readonly Entity[],
    deliver: Deliver,
    exchange: string,
    routingKey: string,
    options: PublishOptions,
  ): Promise<void> {
    for (const entity of declare) await this.connection.maybeDeclare(entity);
    // Declaring may have replaced the default channel (a reconnect): deliver on the current one.
    return deliver(await this.connection.channel(), exchange, routingKey, options);
  }

  /** Builds the outgoing message without publishing it. */
  prepare(body: unknown, params: PublishParams = {}, exchange: Exchange = this.exchange): OutgoingMessage {
    const headers: Headers = { ...(params.headers ?? {}) };
    let encoded: { body: Buffer; contentType: string; contentEncoding: string };
    const serializer = params.serializer ?? this.#options.serializer;
    if (Buffer.isBuffer(body) && serializer === undefined) {
      // Pre-serialized bytes travel as they are (Kombu's raw data).
      encoded = { body, contentType: params.contentType ?? 'application/data', contentEncoding: params.contentEncoding ?? 'binary' };
    } else {
      encoded = this.#serializers.encode(body, serializer ?? 'json');
    }
    const compression = params.compression ?? this.#options.compression;
    if (compression) {
      const compressed = compress(encoded.body, compression);
      encoded = { ...encoded, body: compressed.body };
      headers['compression'] = compressed.compression;
    }
    const properties: MessageProperties = {
      deliveryMode: params.deliveryMode ?? exchange.deliveryMode ?? this.#options.deliveryMode ?? 2,
      priority: params.priority ?? 0,
    };
    if (params.correlationId !== undefined) properties.correlationId = params.correlationId;
    if (params.replyTo !== undefined) properties.replyTo = params.replyTo;
    if (params.expiration !== undefined) properties.expiration = String(Math.max(0, Math.trunc(params.expiration)));
    if (params.messageId !== undefined) properties.messageId = params.messageId;
    if (params.timestamp !== undefined) properties.timestamp = params.timestamp;
    if (params.type !== undefined) properties.type = params.type;
    if (params.userId !== undefined) properties.userId = params.userId;
    if (params.appId !== undefined) properties.appId = params.appId;
    return { body: encoded.body, contentType: encoded.contentType, contentEncoding: encoded.contentEncoding, headers, properties };
  }
}

function toExchange(exchange: Exchange | string | undefined): Exchange {
  if (exchange === undefined || exchange === '') return Exchange.DEFAULT;
  return typeof exchange === 'string' ? new Exchange(exchange) : exchange;
}
