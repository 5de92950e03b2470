import { ChannelClosed } from '../errors';
import type { DelayedCount } from '../transport';
import { VirtualChannel } from '../virtual/virtual-channel';
import type { VirtualTransport } from '../virtual/virtual-transport';
import type { MemoryBroker } from './memory-broker';

/** A channel of the memory transport: a `VirtualChannel` that can also count the delayed messages its broker holds. */
export class MemoryChannel extends VirtualChannel {
  readonly #broker: MemoryBroker;

  constructor(transport: VirtualTransport, broker: MemoryBroker) {
    super(transport);
    this.#broker = broker;
  }

  /** ETA/countdown messages the in-process broker holds until due, by the queue each is for. */
  countDelayed(): Promise<DelayedCount> {
    if (!this.isOpen) return Promise.reject(new ChannelClosed('The channel is closed; open a new one with transport.createChannel().'));
    return Promise.resolve(this.#broker.countDelayed());
  }
}
