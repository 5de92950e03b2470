import { ChannelClosed, VirtualChannel, type ConsumeOptions, type ConsumerHandle, type DelayedCount, type VirtualTransport } from '@kq/core';

/**
 * A `VirtualChannel` that, before consuming, learns the fanout bindings other kq processes declared for the
 * queues (Kombu keeps them in each process's memory; kq also records them in Redis), so a process that consumes
 * a fanout-bound queue without declaring it listens on PUB/SUB instead of polling an empty list.
 */
export class RedisChannel extends VirtualChannel {
  readonly #learnFanoutBindings: (queues: readonly string[]) => Promise<void>;
  readonly #countDelayed: () => Promise<DelayedCount>;

  constructor(transport: VirtualTransport, learnFanoutBindings: (queues: readonly string[]) => Promise<void>, countDelayed: () => Promise<DelayedCount>) {
    super(transport);
    this.#learnFanoutBindings = learnFanoutBindings;
    this.#countDelayed = countDelayed;
  }

  /** ETA/countdown messages waiting in the delayed set (`_kq.delayed`), by queue when there are not too many. */
  countDelayed(): Promise<DelayedCount> {
    if (!this.isOpen) return Promise.reject(new ChannelClosed('The channel is closed; open a new one with transport.createChannel().'));
    return this.#countDelayed();
  }

  override async consume(options: ConsumeOptions): Promise<ConsumerHandle> {
    if (this.isOpen) await this.#learnFanoutBindings(options.queues);
    return super.consume(options);
  }
}
