import { EventEmitter } from 'node:events';
import {
  type MemoryBroker,
  MemoryStore,
  VirtualTransport,
  type FanoutBus,
  type StoredMessage,
  type TransportDescription,
  type VirtualStoreFeatures,
} from '@kq/core';

/** The bug a live-fanout store can have that the conformance suite must catch (once found in a real store). */
export interface LiveFanoutDefects {
  /**
   * A subscriber with an empty binding key listens twice for messages published with an empty routing key (two
   * overlapping subscribe patterns, where Kombu's Redis fanout needs two disjoint ones), so it receives each twice.
   */
  hearsEmptyKeyTwice?: boolean;
}

const busesByBroker = new WeakMap<MemoryBroker, EventEmitter>();

/**
 * Publish/subscribe among the transports of one memory broker, with Kombu's Redis fanout rule: a subscriber with an
 * empty binding key hears every routing key, one with a key hears that key only.
 */
class MemoryFanoutBus implements FanoutBus {
  readonly #events: EventEmitter;
  readonly #defects: LiveFanoutDefects;

  constructor(broker: MemoryBroker, defects: LiveFanoutDefects) {
    let events = busesByBroker.get(broker);
    if (!events) busesByBroker.set(broker, (events = new EventEmitter().setMaxListeners(0)));
    this.#events = events;
    this.#defects = defects;
  }

  async publish(exchange: string, routingKey: string, message: StoredMessage): Promise<void> {
    this.#events.emit(exchange, routingKey, message);
  }

  async subscribe(exchange: string, bindingKey: string, onMessage: (message: StoredMessage) => void): Promise<() => Promise<void>> {
    const listeners: Array<(routingKey: string, message: StoredMessage) => void> = [
      (routingKey, message) => {
        if (bindingKey === '' || bindingKey === routingKey) onMessage(message);
      },
    ];
    if (bindingKey === '' && this.#defects.hearsEmptyKeyTwice) {
      listeners.push((routingKey, message) => {
        if (routingKey === '') onMessage(message);
      });
    }
    for (const listener of listeners) this.#events.on(exchange, listener);
    return async () => {
      for (const listener of listeners) this.#events.off(exchange, listener);
    };
  }
}

/** The memory store with live fanout (as Kombu's Redis transport has): fanout messages go to consumers, not queues. */
class LiveFanoutMemoryStore extends MemoryStore {
  override readonly features: VirtualStoreFeatures;
  readonly fanoutBus: FanoutBus;

  constructor(broker: MemoryBroker, defects: LiveFanoutDefects) {
    super(broker);
    this.features = { ...new MemoryStore(broker).features, fanout: 'live' };
    this.fanoutBus = new MemoryFanoutBus(broker, defects);
  }
}

export class LiveFanoutMemoryTransport extends VirtualTransport {
  readonly name = 'live-fanout-memory';
  readonly #broker: MemoryBroker;

  constructor(broker: MemoryBroker, defects: LiveFanoutDefects = {}) {
    super(new LiveFanoutMemoryStore(broker, defects), { pollIntervalMs: 5000 });
    this.#broker = broker;
  }

  describe(): TransportDescription {
    return { transport: 'live-fanout-memory', hostname: this.#broker.name, port: null, virtualHost: null, userid: null, ssl: false };
  }
}
