import type { Exchange } from '../exchange';
import type { Queue } from '../queue';
import type { BindingRecord } from '../routing';
import type { Claim, ClaimOptions, RestoreOptions, StoredMessage, VirtualStore, VirtualStoreFeatures } from '../virtual/virtual-store';
import { MemoryBroker, type MemoryClaim } from './memory-broker';

/**
 * The `VirtualStore` of the in-memory transport, and the reference implementation for custom stores: every
 * method is the plainest correct version of the SPI contract.
 */
export class MemoryStore implements VirtualStore {
  readonly features: VirtualStoreFeatures = {
    priorities: true,
    delayedDelivery: true,
    crashRecovery: false,
    fanout: 'queued',
    pipelinedClaims: true,
  };
  readonly broker: MemoryBroker;

  constructor(broker: MemoryBroker = MemoryBroker.named()) {
    this.broker = broker;
  }

  async open(): Promise<void> {}

  async close(): Promise<void> {
    // Delayed messages belong to the broker, like every other message: they outlive the transport that
    // published them (but not the process).
  }

  async declareExchange(exchange: Exchange): Promise<void> {
    this.broker.exchanges.set(exchange.name, exchange);
  }

  async lookupExchange(name: string): Promise<Exchange | undefined> {
    return this.broker.exchanges.get(name);
  }

  async deleteExchange(name: string): Promise<void> {
    this.broker.exchanges.delete(name);
    this.broker.bindings.delete(name);
  }

  async addBinding(exchange: string, binding: BindingRecord): Promise<void> {
    const records = this.broker.bindings.get(exchange) ?? [];
    if (!records.some((record) => sameBinding(record, binding))) records.push(binding);
    this.broker.bindings.set(exchange, records);
  }

  async removeBinding(exchange: string, binding: BindingRecord): Promise<void> {
    const records = this.broker.bindings.get(exchange);
    if (records) this.broker.bindings.set(exchange, records.filter((record) => !sameBinding(record, binding)));
  }

  async listBindings(exchange: string): Promise<readonly BindingRecord[]> {
    return this.broker.bindings.get(exchange) ?? [];
  }

  async declareQueue(queue: Queue): Promise<void> {
    const state = this.broker.queue(queue.name);
    if (state) state.declaration = queue;
  }

  async lookupQueue(name: string): Promise<Queue | undefined> {
    return this.broker.queue(name, false)?.declaration;
  }

  async queueExists(name: string): Promise<boolean> {
    return this.broker.hasQueue(name);
  }

  async deleteQueue(name: string): Promise<number> {
    return this.broker.deleteQueue(name);
  }

  async purgeQueue(name: string): Promise<number> {
    return this.broker.purge(name);
  }

  async queueSize(name: string): Promise<number> {
    return this.broker.size(name);
  }

  async queueSizesByStep(name: string): Promise<ReadonlyArray<{ step: number; messageCount: number }>> {
    return this.broker.sizesByStep(name);
  }

  async push(queue: string, message: StoredMessage, priority: number): Promise<void> {
    this.broker.put(queue, message, priority, 'tail');
  }

  async pushDelayed(queue: string, message: StoredMessage, priority: number, dueAt: number): Promise<void> {
    this.broker.putLater(queue, message, priority, dueAt);
  }

  claim(queues: readonly string[], options: ClaimOptions): Promise<Claim[]> {
    const taken = this.broker.take(queues, options.max);
    if (taken.length > 0 || options.blockMs <= 0 || options.signal?.aborted) return Promise.resolve(taken);
    return new Promise((resolve) => {
      const undo: Array<() => void> = [];
      let done = false;
      const finish = (claims: MemoryClaim[]): void => {
        if (done) return;
        done = true;
        for (const step of undo) step();
        resolve(claims);
      };
      undo.push(
        this.broker.wait(queues, () => {
          const claims = this.broker.take(queues, options.max);
          if (claims.length === 0) return false;
          finish(claims);
          return true;
        }),
      );
      const timer = setTimeout(() => finish([]), options.blockMs);
      undo.push(() => clearTimeout(timer));
      const onAbort = (): void => finish([]);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      undo.push(() => options.signal?.removeEventListener('abort', onAbort));
    });
  }

  async keepRejected(claim: Claim, reason: string): Promise<void> {
    const { queue, message, priority } = claim as MemoryClaim;
    this.broker.deadLetters.keep(queue, message, priority, reason);
  }

  async ack(): Promise<void> {
    // The claimed message was already taken out of its list; forgetting it is all an ack needs here.
  }

  async restore(claim: Claim, position: 'head' | 'tail', options: RestoreOptions = {}): Promise<void> {
    const { queue, message, priority } = claim as MemoryClaim;
    const redelivered = options.redelivered ?? true;
    this.broker.put(queue, redelivered ? { ...message, redelivered: true } : message, priority, position);
  }
}

function sameBinding(a: BindingRecord, b: BindingRecord): boolean {
  return a.queue === b.queue && a.routingKey === b.routingKey && JSON.stringify(a.arguments) === JSON.stringify(b.arguments);
}
