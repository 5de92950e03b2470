import type { Exchange } from '../exchange';
import type { Headers, MessageProperties } from '../message';
import type { Queue } from '../queue';
import type { BindingRecord } from '../routing';
import type { FanoutDelivery } from '../transport';

/**
 * A message as a virtual store keeps it: the published message plus where it was published and Kombu's
 * publisher-made delivery tag, which stays the same across restores.
 */
export interface StoredMessage {
  body: Buffer;
  contentType: string;
  contentEncoding: string;
  headers: Headers;
  properties: MessageProperties;
  /** Exchange the message was published to (`''` for the default exchange). */
  exchange: string;
  routingKey: string;
  /** Unique per message, made by the publisher (a uuid4 string, as Kombu does). */
  deliveryTag: string;
  /** Set when the message was restored or requeued after a delivery. */
  redelivered: boolean;
}

/**
 * A message a consumer has taken. The store keeps it aside (Kombu's `unacked`) until `ack` or `restore`.
 * Stores may return their own subtype carrying whatever they need to settle it (a lease, a file path).
 */
export interface Claim {
  readonly queue: string;
  readonly message: StoredMessage;
}

export interface ClaimOptions {
  /** Take at most this many messages (at least 1). */
  max: number;
  /** Wait at most this long for a message when all queues are empty; 0 = do not wait. */
  blockMs: number;
  /** Aborted when the consumer is cancelled or the channel closes: stop waiting and resolve with []. */
  signal?: AbortSignal;
  /** The consumer does not ack: forget the message instead of keeping it aside. */
  noAck: boolean;
  /**
   * Takes claims ahead of the batch: a store that holds a message before it has finished recording the claim (Redis:
   * what one BRPOP woke up with, or what a claim's moves took) may hand it over here at once, so its handler starts a
   * round trip sooner; the returned promise then resolves with the rest of the batch only (together at most `max`).
   * Settling such a claim is the store's to order after its record. Stores are free never to call it.
   */
  onEarlyClaims?: (claims: Claim[]) => void;
}

export interface RestoreOptions {
  /**
   * False when the message was claimed but never handed to a consumer (a consumer cancelled mid-claim): it goes back
   * exactly as it was, without the `redelivered` mark. Default true.
   */
  redelivered?: boolean;
}

/** What a store supports beyond the required SPI. */
export interface VirtualStoreFeatures {
  /** `push` honours the priority bucket and `claim` serves buckets in order. */
  priorities: boolean;
  /** `pushDelayed` is implemented with the delay held by the store, not by a process. */
  delayedDelivery: boolean;
  /** A claim held by a consumer that died comes back by itself (visibility timeout / lease). */
  crashRecovery: boolean;
  /** `queued` = fanout copies go into bound queues through `push`; `live` = through `fanoutBus`. */
  fanout: FanoutDelivery;
  /**
   * A consumer whose claim came back full asks for its next batch before handing this one out, so the store works on
   * the next while the process works on this. A consumer has one claim out at a time. A store that declares this
   * sends a claim that does not wait (`blockMs` 0) before its call returns (no await ahead of the write): the batch
   * is handed out synchronously right after, and a claim not yet sent by then overlaps nothing. Default false.
   */
  pipelinedClaims?: boolean;
}

/** How a live fanout publish is asked for. */
export interface FanoutPublishOptions {
  /** The publisher needs to know whether anybody received it (its count is awaited). */
  readonly mandatory: boolean;
}

/** PUB/SUB style fanout for stores where fanout copies are not stored (Redis). */
export interface FanoutBus {
  /**
   * Resolves, where the bus can tell, to how many subscribers the message reached (Redis: PUBLISH's count). A
   * mandatory publish that reached none is unroutable, whatever bindings remain from subscribers gone without a word.
   * A publish that is not mandatory needs no count, and a bus may then send it without waiting for any answer.
   */
  publish(exchange: string, routingKey: string, message: StoredMessage, options?: FanoutPublishOptions): Promise<number | void>;
  /** Delivers every message published to `exchange` whose routing key matches `bindingKey`, until unsubscribed. */
  subscribe(
    exchange: string,
    bindingKey: string,
    onMessage: (message: StoredMessage) => void,
  ): Promise<() => Promise<void>>;
}

/**
 * The storage SPI behind `VirtualChannel`: everything a broker-less or simple key-value backend must provide so that
 * `VirtualChannel` can give it exchanges, routing, QoS, ack emulation, priorities and fair many-queue consumption.
 *
 * Contract (the conformance suite checks it through the channel):
 * - `push` appends to the tail of the queue's bucket; `claim` takes from the head (FIFO per queue and bucket).
 * - `claim` serves buckets in ascending order first, then queues in the order given, rotating a served queue to
 *   the back between picks of one batch, and must hand each message to exactly one claimer even across processes.
 * - A claimed message is invisible to other claimers until `ack` (gone) or `restore` (visible again, redelivered).
 */
export interface VirtualStore {
  readonly features: VirtualStoreFeatures;
  open(): Promise<void>;
  close(): Promise<void>;

  /** Remember an exchange so other channels and processes can look it up. Optional: default is per transport. */
  declareExchange?(exchange: Exchange): Promise<void>;
  /** The declaration of an exchange made elsewhere (another transport instance or process), if known. */
  lookupExchange?(name: string): Promise<Exchange | undefined>;
  deleteExchange?(name: string): Promise<void>;

  addBinding(exchange: string, binding: BindingRecord): Promise<void>;
  removeBinding(exchange: string, binding: BindingRecord): Promise<void>;
  listBindings(exchange: string): Promise<readonly BindingRecord[]>;

  declareQueue(queue: Queue): Promise<void>;
  /** The declaration of a queue made elsewhere, if the store keeps them (used for dead-lettering). */
  lookupQueue?(name: string): Promise<Queue | undefined>;
  queueExists(name: string): Promise<boolean>;
  /** Deletes the queue's messages (and its declaration); resolves to how many messages were ready. */
  deleteQueue(name: string): Promise<number>;
  purgeQueue(name: string): Promise<number>;
  /** Ready messages (not claimed). */
  queueSize(name: string): Promise<number>;
  /** Ready messages per priority step (`push`'s bucket), lowest step first; steps with none may be left out. Optional. */
  queueSizesByStep?(name: string): Promise<ReadonlyArray<{ step: number; messageCount: number }>>;

  /** Append to the tail of `queue` in priority bucket `priority` (already normalised to a step by the channel). */
  push(queue: string, message: StoredMessage, priority: number): Promise<void>;
  /**
   * Appends several messages in order, as `push` each would. Optional: stores that can write a batch in one command
   * (Redis: one LPUSH) implement it for `Channel.publishBatch`; the channel pushes one by one otherwise.
   */
  pushMany?(queue: string, messages: readonly StoredMessage[], priority: number): Promise<void>;
  /** Hold the message until `dueAt` (epoch ms), then push it. Required when `features.delayedDelivery`. */
  pushDelayed?(queue: string, message: StoredMessage, priority: number, dueAt: number): Promise<void>;
  claim(queues: readonly string[], options: ClaimOptions): Promise<Claim[]>;
  /**
   * False once the store knows a claim was taken back (its lease ran out and the message may be with another
   * consumer): the delivery reports `stale` and a worker does not start it. Optional; default: held until settled.
   */
  holds?(claim: Claim): boolean;
  /**
   * Keeps a rejected message whose queue has no dead-letter exchange, with the reason, where `kq dlq` finds it
   * (the channel acks the claim afterwards). Optional: without it such messages are dropped, as Kombu drops them.
   */
  keepRejected?(claim: Claim, reason: string): Promise<void>;
  /** Forget a claimed message. May throw `StaleDeliveryError` when the claim is no longer ours. */
  ack(claim: Claim): Promise<void>;
  /**
   * Make a claimed message visible again with `redelivered` set: at the head of its queue (consumed next; used
   * when a channel closes) or at the tail (`requeue`). May throw `StaleDeliveryError`.
   */
  restore(claim: Claim, position: 'head' | 'tail', options?: RestoreOptions): Promise<void>;

  /** Present when `features.fanout` is `live`. */
  readonly fanoutBus?: FanoutBus;
}
