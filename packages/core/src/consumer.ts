import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from './connection';
import { DecodeError, isUnreadableContent, KqError, QueueNotFound } from './errors';
import { backoffCountdown } from './exponential-backoff';
import type { Delivery } from './message';
import { assertMessageSize } from './message-size';
import type { Queue } from './queue';
import { defaultSerializers, type SerializerRegistry } from './serialization/serializer-registry';
import type { Channel, ConsumerHandle } from './transport';
import { TypedEmitter } from './typed-emitter';

/** Declare-then-consume rounds when a declared queue is gone by the time it is consumed (see `#start`). */
const DECLARE_AND_CONSUME_ATTEMPTS = 3;

export interface ConsumerOptions {
  queues: readonly Queue[];
  /** Called with the decoded body (the raw bytes with `decode: false`). Settle the delivery here (unless `noAck`). */
  onMessage: (body: unknown, delivery: Delivery) => void | Promise<void>;
  /** Decode bodies before `onMessage` (default true). False hands over the raw `Buffer`, for callers with their own codec. */
  decode?: boolean;
  /** Content types or serializer names to decode; others are rejected undecoded. Default: every registered codec. */
  accept?: readonly string[];
  prefetch?: number;
  noAck?: boolean;
  consumerTag?: string;
  /** Declare the queues (and their exchanges and bindings) before consuming. Default true. */
  autoDeclare?: boolean;
  serializers?: SerializerRegistry;
}

export type ConsumerEvents = {
  /** A message could not be decoded (or was not accepted) and was rejected; `reason` says why. */
  rejected: [delivery: Delivery, reason: Error];
  /** `onMessage` threw; the delivery was left as the handler left it. */
  error: [error: Error, delivery?: Delivery];
  /** The consumer lost its channel and resumed on a new one. */
  recovered: [];
};

/**
 * Consumes from several queues on a channel of its own with Kombu's semantics: declares what it reads, decodes by
 * content type against an accept list, and never lets a bad message or a failing handler stop it. Undecodable or
 * disallowed content is rejected (dead-lettered where the queue has a dead-letter exchange) with the reason reported.
 * If its channel dies, it resumes on a new one.
 */
export class Consumer extends TypedEmitter<ConsumerEvents> {
  readonly connection: Connection;
  readonly tag: string;
  readonly #options: ConsumerOptions;
  readonly #serializers: SerializerRegistry;
  #queues: readonly Queue[];
  #channel: Channel | undefined;
  #handle: ConsumerHandle | undefined;
  #prefetch: number;
  #active = false;

  constructor(connection: Connection, options: ConsumerOptions) {
    super();
    this.connection = connection;
    this.#options = options;
    this.tag = options.consumerTag ?? `kq-${randomUUID()}`;
    this.#prefetch = options.prefetch ?? 0;
    this.#queues = [...options.queues];
    this.#serializers = options.serializers ?? defaultSerializers;
  }

  get queues(): readonly Queue[] {
    return this.#queues;
  }

  /** Consuming now: started, not cancelled, with a consumer on an open channel (false while a lost channel recovers). */
  get isConsuming(): boolean {
    return this.#active && this.#handle !== undefined && (this.#channel?.isOpen ?? false);
  }

  get prefetch(): number {
    return this.#prefetch;
  }

  /** Declares the queues (unless `autoDeclare: false`) and starts consuming. */
  async consume(): Promise<void> {
    if (this.#active) return;
    this.#active = true;
    await this.#start();
  }

  /**
   * Replaces the queues consumed (Celery's `add_consumer` / `cancel_consumer`). While consuming, new queues are
   * declared (unless `autoDeclare: false`) and consumption restarts on the same channel, so deliveries in hand stay
   * valid and are settled as usual.
   */
  async setQueues(queues: readonly Queue[]): Promise<void> {
    this.#queues = [...queues];
    const channel = this.#channel;
    if (!this.#active || !channel) return;
    if (this.#options.autoDeclare ?? true) for (const queue of this.#queues) await this.connection.declare(queue, channel);
    const previous = this.#handle;
    this.#handle = undefined;
    await previous?.cancel();
    if (this.#queues.length > 0) this.#handle = await this.#consumeOn(channel);
  }

  async setPrefetch(count: number): Promise<void> {
    this.#prefetch = count;
    await this.#handle?.setPrefetch(count);
  }

  /**
   * Stops receiving new messages but keeps the channel open, so deliveries in hand can still be settled
   * (a worker's warm shutdown). `cancel()` afterwards closes the channel.
   */
  async stopConsuming(): Promise<void> {
    this.#active = false;
    const handle = this.#handle;
    this.#handle = undefined;
    await handle?.cancel();
  }

  /** Stops consuming and closes the consumer's channel; deliveries not yet settled go back to their queues. */
  async cancel(): Promise<void> {
    this.#active = false;
    const channel = this.#channel;
    this.#channel = undefined;
    this.#handle = undefined;
    await channel?.close().catch(() => undefined);
  }

  async #start(afterFailure = false): Promise<void> {
    const channel = await this.connection.createChannel(undefined, { afterFailure });
    this.#channel = channel;
    channel.on('error', (error) => this.emit('error', error));
    channel.on('close', (error) => {
      if (this.#active && this.#channel === channel && error) void this.#recover();
    });
    const autoDeclare = this.#options.autoDeclare ?? true;
    if (autoDeclare) {
      for (const queue of this.#queues) await this.connection.declare(queue, channel);
    }
    if (this.#queues.length === 0) return;
    for (let attempt = 1; ; attempt++) {
      try {
        this.#handle = await this.#consumeOn(channel);
        return;
      } catch (error) {
        // Declared a moment ago and gone already: a queue with an expiry (Celery's pidbox queues: 10 s) outlived by a
        // process starved of CPU between declaring and consuming, as in a fleet starting on a busy machine.
        if (!autoDeclare || attempt >= DECLARE_AND_CONSUME_ATTEMPTS || !(error instanceof QueueNotFound)) throw error;
        const missing = this.#queues.find((queue) => queue.name === error.queue);
        if (!missing) throw error;
        await this.connection.declare(missing, channel);
      }
    }
  }

  #consumeOn(channel: Channel): Promise<ConsumerHandle> {
    return channel.consume({
      queues: this.#queues.map((queue) => queue.name),
      prefetch: this.#prefetch,
      noAck: this.#options.noAck ?? false,
      consumerTag: this.tag,
      onMessage: (delivery) => this.#receive(delivery),
      onCancel: () => {
        if (this.#active) void this.#recover();
      },
    });
  }

  async #recover(): Promise<void> {
    // Close the old channel first: left open, its consumer could come back next to the new one.
    const stale = this.#channel;
    this.#channel = undefined;
    this.#handle = undefined;
    await stale?.close().catch(() => undefined);
    for (let attempt = 1; this.#active; attempt++) {
      try {
        await this.#start(true);
        this.emit('recovered');
        return;
      } catch (error) {
        this.emit('error', error instanceof Error ? error : new KqError(String(error)));
        await sleep(backoffCountdown(attempt, { factor: 100, maximum: 5000, jitter: false }));
      }
    }
  }

  /** Rejects (dead-letters) a delivery the consumer will not hand over, saying why. */
  async #reject(delivery: Delivery, reason: Error): Promise<void> {
    if (!delivery.acknowledged) {
      await delivery.reject(`${reason.name}: ${reason.message}`).catch((rejectError: unknown) => this.emit('error', toError(rejectError), delivery));
    }
    this.emit('rejected', delivery, reason);
  }

  // Not async: it runs once per message, and a handler that finishes synchronously (a worker receiving a task it
  // hands to its pool) then costs no promise at all.
  #receive(delivery: Delivery): void {
    const limit = this.connection.maxMessageSize;
    // Checked before anything reads the body, in both modes: a hostile producer's giant body goes no further.
    try {
      assertMessageSize(delivery.body, limit);
    } catch (error) {
      void this.#reject(delivery, toError(error));
      return;
    }
    if (this.#options.decode === false) {
      this.#handOver(delivery.body, delivery);
      return;
    }
    let body: unknown;
    try {
      body = delivery.decode({
        serializers: this.#serializers,
        ...(this.#options.accept ? { accept: this.#options.accept } : {}),
        ...(limit === null ? {} : { maxDecompressedSize: limit }),
      });
    } catch (error) {
      void this.#reject(delivery, isUnreadableContent(error) ? error : new DecodeError(String(error), { cause: error }));
      return;
    }
    this.#handOver(body, delivery);
  }

  /** Calls the handler; what it throws, or the promise it returns rejects with, is reported as an `error`. */
  #handOver(body: unknown, delivery: Delivery): void {
    let handled: void | Promise<void>;
    try {
      handled = this.#options.onMessage(body, delivery);
    } catch (error) {
      this.emit('error', toError(error), delivery);
      return;
    }
    if (handled instanceof Promise) handled.catch((error: unknown) => this.emit('error', toError(error), delivery));
  }
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new KqError(String(error));
}
