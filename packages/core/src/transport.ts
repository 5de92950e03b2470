import type { DeadLetterBox } from './dead-letters';
import type { ExchangeType, Exchange } from './exchange';
import type { BeatLease, BeatLeaseOptions } from './leases/beat-lease';
import type { CycleRegister } from './leases/cycle-register';
import type { Delivery, OutgoingMessage } from './message';
import type { Queue } from './queue';
import type { TypedEmitter } from './typed-emitter';

/**
 * Which way priorities run. Kombu's virtual transports (Redis) serve the **lowest** number first (0 before 9);
 * AMQP serves the highest first. Celery users mixing brokers meet this; kq reports it instead of hiding it.
 */
export type PriorityOrder = 'lower-first' | 'higher-first';

/**
 * How a fanout exchange delivers:
 * - `queued`: a copy is stored in every bound queue (AMQP, memory) — a consumer that attaches later still gets it;
 * - `live`: only queues with an active consumer at publish time get it (Redis PUB/SUB, as Kombu does).
 */
export type FanoutDelivery = 'queued' | 'live';

/** What a transport can do. The conformance suite and the worker decide what to run or how to behave from this. */
export interface TransportCapabilities {
  /** Exchange types whose routing the transport implements. */
  readonly exchangeTypes: readonly ExchangeType[];
  /** How fanout exchanges deliver, or null when fanout is not supported. */
  readonly fanout: FanoutDelivery | null;
  /** Priority support and direction, or null when priorities are ignored. */
  readonly priorities: PriorityOrder | null;
  /**
   * A consumer of several queues is served the most urgent message among all of them first (the virtual transports:
   * claims take the lowest priority step across the queues); AMQP serves each queue by its own priorities.
   */
  readonly prioritiesAcrossQueues?: boolean;
  /** The highest meaningful priority value (9 on virtual transports, `maxPriority` of the queue on AMQP). */
  readonly maxPriority: number;
  /** Queue `messageTtl` is enforced. */
  readonly messageTtl: boolean;
  /** Rejected (and, with `messageTtl`, expired) messages go to the queue's dead-letter exchange. */
  readonly deadLettering: boolean;
  /** `publish(..., { delay })` holds the message in the broker until due, with no process holding it. */
  readonly delayedDelivery: boolean;
  /** `publish` resolves only once the broker has taken responsibility for the message. */
  readonly publisherConfirms: boolean;
  /** Deliveries held by a consumer that dies come back on their own (visibility timeout, lease, or connection loss). */
  readonly crashRecovery: boolean;
  /**
   * Every delivery carries the broker's own redelivered flag, true or false (AMQP). Where it is absent (the virtual
   * transports, as Kombu's), only restored messages are marked; Celery reports `redelivered` as None for the rest.
   */
  readonly redeliveredFlag?: boolean;
  /**
   * Where `requeue()` puts a message back: `head` (AMQP: its old place, consumed next) or `tail` (Kombu's virtual
   * transports: behind everything waiting). Kombu's transports differ, so a transport states which.
   */
  readonly requeuePosition?: 'head' | 'tail';
}

export interface QueueStats {
  queue: string;
  messageCount: number;
  consumerCount: number;
}

export interface PublishOptions {
  /** Fail with `UnroutableError` when no queue matches, instead of dropping the message. */
  mandatory?: boolean;
  /** Hold the message this many milliseconds before it becomes visible (needs `capabilities.delayedDelivery`). */
  delay?: number;
}

export interface GetOptions {
  noAck?: boolean;
}

export interface ConsumeOptions {
  /** One consumer may read many queues; they are polled fairly (round robin, last-served to the back). */
  queues: readonly string[];
  onMessage: (delivery: Delivery) => void;
  /** Most unsettled deliveries this consumer holds at once; 0 = unlimited. Ignored with `noAck`. */
  prefetch?: number;
  /** The broker forgets each message as it is delivered; the delivery needs no settling. */
  noAck?: boolean;
  consumerTag?: string;
  /** Called when the broker cancels the consumer (its queue was deleted, a node failed). */
  onCancel?: (reason: Error) => void;
}

/** A running consumer. */
export interface ConsumerHandle {
  readonly tag: string;
  readonly queues: readonly string[];
  readonly prefetch: number;
  /** Change the prefetch limit while consuming (Celery's ETA bump, the autoscaler). */
  setPrefetch(count: number): Promise<void>;
  /** Stop receiving. Unsettled deliveries stay with the caller, who should still settle them. */
  cancel(): Promise<void>;
}

export type ChannelEvents = {
  /** The channel closed; `error` is set when it closed because of a failure. */
  close: [error?: Error];
  /** An asynchronous failure that no awaiting caller received (a broken consumer loop, a failed restore). */
  error: [error: Error];
};

/** Delayed messages a broker holds: all of them, and by target queue where the broker can tell. */
export interface DelayedCount {
  total: number;
  byQueue?: Record<string, number>;
}

/**
 * A channel: the unit of work on a connection. All broker operations go through one. Channels are cheap on AMQP;
 * on virtual transports they are a view over the shared store.
 */
export interface Channel extends TypedEmitter<ChannelEvents> {
  readonly isOpen: boolean;
  declareExchange(exchange: Exchange): Promise<void>;
  deleteExchange(name: string): Promise<void>;
  /** Declares the queue, the exchanges of its bindings, and the bindings. Idempotent for an identical declaration. */
  declareQueue(queue: Queue): Promise<QueueStats>;
  /** Reports a queue's depth without declaring it; `QueueNotFound` if it does not exist. */
  checkQueue(name: string): Promise<QueueStats>;
  /**
   * Ready messages per priority step (the virtual transports keep one list per step, Kombu's `priority_steps`), by
   * step, lowest first. Optional: brokers with native priorities (AMQP) have no steps to report.
   */
  checkQueueSteps?(name: string): Promise<ReadonlyArray<{ step: number; messageCount: number }>>;
  /**
   * Delayed (ETA/countdown) messages the broker itself holds, not yet in their queue: Redis's delayed set, RabbitMQ's
   * delay ladder, the memory broker's timers. `byQueue` only where the broker can say which queue each is for.
   * Optional: a broker that holds none (whose delays live in the consumers) has nothing to count. Checked by
   * `defineDelayedCountSuite` of @kq/test-harness.
   */
  countDelayed?(): Promise<DelayedCount>;
  bindQueue(queue: string, exchange: string, routingKey: string, args?: Record<string, unknown>): Promise<void>;
  unbindQueue(queue: string, exchange: string, routingKey: string, args?: Record<string, unknown>): Promise<void>;
  /** Deletes the queue and its messages; resolves to how many messages it held. */
  deleteQueue(name: string): Promise<number>;
  /** Removes every ready message; resolves to how many. */
  purgeQueue(name: string): Promise<number>;
  publish(exchange: string, routingKey: string, message: OutgoingMessage, options?: PublishOptions): Promise<void>;
  /**
   * Publishes messages bound for one exchange and routing key, in order, as one batch; resolves once the broker has
   * them all. Optional: where a channel has none, `Producer.publishMessages` publishes them together one by one.
   */
  publishBatch?(exchange: string, routingKey: string, messages: readonly OutgoingMessage[], options?: PublishOptions): Promise<void>;
  /** Takes one message synchronously-style (`basic.get`); null when the queue is empty. */
  get(queue: string, options?: GetOptions): Promise<Delivery | null>;
  consume(options: ConsumeOptions): Promise<ConsumerHandle>;
  /** Closes the channel. Unsettled deliveries go back to their queues (redelivered) and consumers stop. */
  close(): Promise<void>;
}

export type TransportEvents = {
  connected: [];
  /** The connection to the broker was lost. The transport may reconnect on its own. */
  disconnected: [error?: Error];
  error: [error: Error];
};

/** A broker connection that makes channels. Connect lazily; every operation may reconnect. */
export interface Transport extends TypedEmitter<TransportEvents> {
  /** Short name: `memory`, `redis`, `amqp`, or a custom transport's. */
  readonly name: string;
  readonly capabilities: TransportCapabilities;
  readonly isConnected: boolean;
  connect(): Promise<void>;
  createChannel(): Promise<Channel>;
  /**
   * Makes delayed messages any client puts in the broker's delay structure for these queues reach them (RabbitMQ:
   * Kombu 5.5+'s `celery_delayed_*` ladder and each queue's `#.<key>` binding, as Celery's worker declares at
   * start-up). Transports whose delay needs no per-queue set-up leave it out.
   */
  prepareDelayedDelivery?(queues: readonly Queue[]): Promise<void>;
  /*
   * Optional capabilities: contracts declared here in @kq/core that a transport implements on its broker, each checked
   * by a shared suite of @kq/test-harness. Callers test for the method; the transport package is never looked up by name.
   */
  /** kq beat's leader election and schedule state on this broker (`BeatLease`; `defineBeatLeaseSuite`). kq beat needs it. */
  beatLease?(options: BeatLeaseOptions): BeatLease;
  /** The register of kq periodic-task cycles on this broker (`CycleRegister`; `defineCycleRegisterSuite`). */
  cycleRegister?(): CycleRegister;
  /** Rejected messages the broker keeps, for `kq dlq` and the dashboard (`DeadLetterBox`; `defineDeadLetterSuite`). */
  deadLetters?(): DeadLetterBox;
  /** Where it connects, with the password removed (for logs and `inspect stats`). */
  describe(): TransportDescription;
  close(): Promise<void>;
}

export interface TransportDescription {
  transport: string;
  hostname: string;
  port: number | null;
  virtualHost: string | null;
  userid: string | null;
  ssl: boolean;
  /** The SASL mechanism the connection logs in with (`PLAIN` on AMQP), as Kombu's `Connection.info()` reports it. */
  loginMethod?: string | null;
}
