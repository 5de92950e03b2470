import { Exchange } from './exchange';

/** A binding of a queue to an exchange with a routing key (a pattern for topic, ignored for fanout). */
export class Binding {
  readonly exchange: Exchange;
  readonly routingKey: string;
  /** Binding arguments: `x-match` and the header values for headers exchanges. */
  readonly arguments: Readonly<Record<string, unknown>>;

  constructor(exchange: Exchange | string, routingKey = '', args: Record<string, unknown> = {}) {
    this.exchange = typeof exchange === 'string' ? new Exchange(exchange) : exchange;
    this.routingKey = routingKey;
    this.arguments = { ...args };
  }
}
