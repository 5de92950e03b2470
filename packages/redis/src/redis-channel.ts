import { VirtualChannel, type ConsumeOptions, type ConsumerHandle, type VirtualTransport } from '@kq/core';

/**
 * A `VirtualChannel` that, before consuming, learns the fanout bindings other kq processes declared for the
 * queues (Kombu keeps them in each process's memory; kq also records them in Redis), so a process that consumes
 * a fanout-bound queue without declaring it listens on PUB/SUB instead of polling an empty list.
 */
export class RedisChannel extends VirtualChannel {
  readonly #learnFanoutBindings: (queues: readonly string[]) => Promise<void>;

  constructor(transport: VirtualTransport, learnFanoutBindings: (queues: readonly string[]) => Promise<void>) {
    super(transport);
    this.#learnFanoutBindings = learnFanoutBindings;
  }

  override async consume(options: ConsumeOptions): Promise<ConsumerHandle> {
    if (this.isOpen) await this.#learnFanoutBindings(options.queues);
    return super.consume(options);
  }
}
