import type { BeatLeaseOptions } from '../leases/beat-lease';
import type { TransportDescription } from '../transport';
import { VirtualTransport, type VirtualTransportOptions } from '../virtual/virtual-transport';
import { MemoryBeatLease } from './memory-beat-lease';
import { MemoryBroker } from './memory-broker';
import { MemoryChannel } from './memory-channel';
import { MemoryCycleRegister } from './memory-cycle-register';
import type { MemoryDeadLetters } from './memory-dead-letters';
import { MemoryStore } from './memory-store';

export interface MemoryTransportOptions extends VirtualTransportOptions {
  /** Which in-process broker to use (a name or an instance). Transports naming the same broker share queues. */
  broker?: string | MemoryBroker;
}

/**
 * The embedded transport (`memory://`): a broker inside this process. No server, no persistence — for tests,
 * demos and single-process apps. `memory://name` selects a separate broker.
 */
export class MemoryTransport extends VirtualTransport {
  readonly name = 'memory';
  readonly broker: MemoryBroker;

  constructor(options: MemoryTransportOptions = {}) {
    const broker = options.broker instanceof MemoryBroker ? options.broker : MemoryBroker.named(options.broker);
    super(new MemoryStore(broker), options);
    this.broker = broker;
  }

  /** `memory://` or `memory://<broker name>`. */
  static fromUrl(url: string, options: MemoryTransportOptions = {}): MemoryTransport {
    const name = new URL(url).hostname || 'default';
    return new MemoryTransport({ ...options, broker: options.broker ?? name });
  }

  protected override newChannel(): MemoryChannel {
    return new MemoryChannel(this, this.broker);
  }

  /** Beats of this process sharing this in-process broker elect one leader among themselves (see `MemoryBeatLease`). */
  beatLease(options: BeatLeaseOptions): MemoryBeatLease {
    return new MemoryBeatLease(this, options);
  }

  /** Periodic-task registers kept in this in-process broker (see `MemoryCycleRegister`). */
  cycleRegister(): MemoryCycleRegister {
    return new MemoryCycleRegister(this);
  }

  /** Messages rejected from a queue without a dead-letter exchange, kept in this in-process broker (see `MemoryDeadLetters`). */
  deadLetters(): MemoryDeadLetters {
    return this.broker.deadLetters;
  }

  describe(): TransportDescription {
    return { transport: 'memory', hostname: this.broker.name, port: null, virtualHost: null, userid: null, ssl: false };
  }
}
