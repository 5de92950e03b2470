import { KqError } from '@kq/core';
import { parseAmqpUrl, type AmqpUrl } from './amqp-url';

/** Kombu's `failover_strategy`: the order in which the brokers of a URL list are tried. */
export type FailoverStrategy = 'round-robin' | 'shuffle';

/**
 * The brokers of a Kombu-style URL list (`amqp://h1//;amqp://h2//`), and which one to try: a connection that fails or
 * is lost moves to the next (Kombu's `maybe_switch_next`), round-robin or in a shuffled order.
 */
export class BrokerAlternates {
  readonly urls: readonly AmqpUrl[];
  readonly #order: number[];
  #position = 0;

  constructor(urls: string, strategy: FailoverStrategy = 'round-robin', random: () => number = Math.random) {
    const parts = urls.split(';').map((part) => part.trim()).filter((part) => part !== '');
    if (parts.length === 0) throw new KqError('The broker URL is empty; expected amqp://user:password@host:port/vhost (several separated by ";").');
    this.urls = parts.map((part) => parseAmqpUrl(part));
    this.#order = this.urls.map((_, index) => index);
    if (strategy === 'shuffle') {
      for (let i = this.#order.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [this.#order[i], this.#order[j]] = [this.#order[j] as number, this.#order[i] as number];
      }
    } else if (strategy !== 'round-robin') {
      throw new KqError(`failoverStrategy must be 'round-robin' or 'shuffle' (Kombu's failover_strategy), not ${JSON.stringify(strategy)}.`);
    }
  }

  /** The broker to connect to now. */
  get current(): AmqpUrl {
    return this.urls[this.#order[this.#position] as number] as AmqpUrl;
  }

  /** Moves on to the next broker (after the last, the first again); with one broker, stays. */
  next(): AmqpUrl {
    this.#position = (this.#position + 1) % this.#order.length;
    return this.current;
  }
}
