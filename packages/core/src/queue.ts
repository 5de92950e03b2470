import { brandClass } from './class-brand';
import { Binding } from './binding';
import { InvalidQueueOptions } from './errors';
import { type Exchange, stableJson } from './exchange';

export type QueueType = 'classic' | 'quorum';

export interface QueueOptions {
  /** Binds the queue to this exchange with `routingKey` (Kombu's `Queue(name, exchange, routing_key)`). */
  exchange?: Exchange | string;
  /** Routing key of the `exchange` binding. Default `''`, as in Kombu. */
  routingKey?: string;
  /** Further bindings, declared with the queue. */
  bindings?: readonly Binding[];
  /** Survives a broker restart. Default true. */
  durable?: boolean;
  /** Only this connection may use it; deleted when it closes. Default false. */
  exclusive?: boolean;
  /** Deleted when its last consumer is cancelled. Default false. */
  autoDelete?: boolean;
  /** Enables priorities 0..maxPriority (AMQP `x-max-priority`). */
  maxPriority?: number;
  /** Messages older than this many milliseconds are expired (dead-lettered if configured). `x-message-ttl`. */
  messageTtl?: number;
  /** The queue is deleted after this many milliseconds unused. `x-expires`. */
  expires?: number;
  /** Rejected and expired messages are republished to this exchange. `x-dead-letter-exchange`. */
  deadLetterExchange?: string;
  /** Routing key for dead-lettered messages (default: the original). `x-dead-letter-routing-key`. */
  deadLetterRoutingKey?: string;
  /** `x-max-length`. */
  maxLength?: number;
  /** `x-max-length-bytes`. */
  maxLengthBytes?: number;
  /** `x-queue-type` (RabbitMQ). Quorum queues are durable, replicated, and count redeliveries. */
  queueType?: QueueType;
  /**
   * Quorum queues only (`x-delivery-limit`): a message delivered this many times more without an ack is taken out
   * of the queue, to `deadLetterExchange` when there is one (reason `delivery_limit`), else dropped. Stops a message
   * that kills every worker it reaches from looping forever.
   */
  deliveryLimit?: number;
  /** Extra broker-specific queue arguments, merged over the ones derived above. */
  arguments?: Record<string, unknown>;
}

/** A named queue with the options it is declared with and the bindings declared along with it. */
export class Queue {
  readonly name: string;
  readonly bindings: readonly Binding[];
  readonly durable: boolean;
  readonly exclusive: boolean;
  readonly autoDelete: boolean;
  readonly maxPriority: number | undefined;
  readonly messageTtl: number | undefined;
  readonly expires: number | undefined;
  readonly deadLetterExchange: string | undefined;
  readonly deadLetterRoutingKey: string | undefined;
  readonly maxLength: number | undefined;
  readonly maxLengthBytes: number | undefined;
  readonly queueType: QueueType | undefined;
  readonly deliveryLimit: number | undefined;
  readonly extraArguments: Readonly<Record<string, unknown>>;

  constructor(name: string, options: QueueOptions = {}) {
    this.name = name;
    const bindings: Binding[] = [];
    if (options.exchange !== undefined) bindings.push(new Binding(options.exchange, options.routingKey ?? ''));
    bindings.push(...(options.bindings ?? []));
    this.bindings = bindings;
    this.durable = options.durable ?? true;
    this.exclusive = options.exclusive ?? false;
    this.autoDelete = options.autoDelete ?? false;
    this.maxPriority = options.maxPriority;
    this.messageTtl = options.messageTtl;
    this.expires = options.expires;
    this.deadLetterExchange = options.deadLetterExchange;
    this.deadLetterRoutingKey = options.deadLetterRoutingKey;
    this.maxLength = options.maxLength;
    this.maxLengthBytes = options.maxLengthBytes;
    this.queueType = options.queueType;
    this.deliveryLimit = options.deliveryLimit;
    this.extraArguments = { ...(options.arguments ?? {}) };
    if (this.deliveryLimit !== undefined) checkDeliveryLimit(name, this.deliveryLimit, this.queueType ?? this.extraArguments['x-queue-type']);
  }

  /** The first binding's exchange, as Kombu's `queue.exchange`. */
  get exchange(): Exchange | undefined {
    return this.bindings[0]?.exchange;
  }

  get routingKey(): string | undefined {
    return this.bindings[0]?.routingKey;
  }

  /** The declaration's options without its bindings: what a store keeps to declare the same queue elsewhere. */
  toOptions(): QueueOptions {
    const options: QueueOptions = { durable: this.durable, exclusive: this.exclusive, autoDelete: this.autoDelete };
    if (this.maxPriority !== undefined) options.maxPriority = this.maxPriority;
    if (this.messageTtl !== undefined) options.messageTtl = this.messageTtl;
    if (this.expires !== undefined) options.expires = this.expires;
    if (this.deadLetterExchange !== undefined) options.deadLetterExchange = this.deadLetterExchange;
    if (this.deadLetterRoutingKey !== undefined) options.deadLetterRoutingKey = this.deadLetterRoutingKey;
    if (this.maxLength !== undefined) options.maxLength = this.maxLength;
    if (this.maxLengthBytes !== undefined) options.maxLengthBytes = this.maxLengthBytes;
    if (this.queueType !== undefined) options.queueType = this.queueType;
    if (this.deliveryLimit !== undefined) options.deliveryLimit = this.deliveryLimit;
    if (Object.keys(this.extraArguments).length > 0) options.arguments = { ...this.extraArguments };
    return options;
  }

  /** The AMQP queue arguments (`x-*`) these options stand for; integers as RabbitMQ wants them. */
  toArguments(): Record<string, unknown> {
    const args: Record<string, unknown> = {};
    const set = (key: string, value: number | string | undefined): void => {
      if (value !== undefined) args[key] = typeof value === 'number' ? Math.trunc(value) : value;
    };
    set('x-max-priority', this.maxPriority);
    set('x-message-ttl', this.messageTtl);
    set('x-expires', this.expires);
    set('x-dead-letter-exchange', this.deadLetterExchange);
    set('x-dead-letter-routing-key', this.deadLetterRoutingKey);
    set('x-max-length', this.maxLength);
    set('x-max-length-bytes', this.maxLengthBytes);
    set('x-queue-type', this.queueType);
    set('x-delivery-limit', this.deliveryLimit);
    return { ...args, ...this.extraArguments };
  }

  /** True when `other` would be accepted as a re-declaration of this queue (same flags and arguments). */
  sameDeclaration(other: Queue): boolean {
    return (
      this.name === other.name &&
      this.durable === other.durable &&
      this.exclusive === other.exclusive &&
      this.autoDelete === other.autoDelete &&
      stableJson(this.toArguments()) === stableJson(other.toArguments())
    );
  }
}
brandClass(Queue, '@kq/core:Queue');

/** RabbitMQ counts deliveries only on quorum queues: elsewhere the limit would be accepted and do nothing. */
function checkDeliveryLimit(queue: string, limit: number, queueType: unknown): void {
  if (!Number.isInteger(limit) || limit < 0) {
    throw new InvalidQueueOptions(`Queue ${JSON.stringify(queue)}: deliveryLimit must be a whole number of redeliveries (0 or more), not ${String(limit)}.`);
  }
  if (queueType !== 'quorum') {
    throw new InvalidQueueOptions(
      `Queue ${JSON.stringify(queue)}: deliveryLimit needs queueType: 'quorum' (RabbitMQ counts deliveries only on quorum queues). ` +
        `Declare it as a quorum queue, or leave deliveryLimit out and let the worker's workerMaxRedeliveries stop a message that keeps killing workers.`,
    );
  }
}
