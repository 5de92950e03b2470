import { brandClass } from './class-brand';
import type { DeliveryMode } from './message';

export type ExchangeType = 'direct' | 'topic' | 'fanout' | 'headers';

export interface ExchangeOptions {
  /** Default `direct`, as in Kombu. */
  type?: ExchangeType;
  /** Survives a broker restart. Default true. */
  durable?: boolean;
  /** Deleted when the last queue is unbound. Default false. */
  autoDelete?: boolean;
  /** Can only be published to from other exchanges. Default false. */
  internal?: boolean;
  /** Default delivery mode of messages published to it through a `Producer`. */
  deliveryMode?: DeliveryMode;
  arguments?: Record<string, unknown>;
}

/** An exchange: where messages are published, routing them to bound queues by its type. */
export class Exchange {
  /** The default exchange: routes a message to the queue named by its routing key. */
  static readonly DEFAULT = new Exchange('', { type: 'direct' });

  readonly name: string;
  readonly type: ExchangeType;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly internal: boolean;
  readonly deliveryMode: DeliveryMode | undefined;
  readonly arguments: Readonly<Record<string, unknown>>;

  constructor(name: string, options: ExchangeOptions = {}) {
    this.name = name;
    this.type = options.type ?? 'direct';
    this.durable = options.durable ?? true;
    this.autoDelete = options.autoDelete ?? false;
    this.internal = options.internal ?? false;
    this.deliveryMode = options.deliveryMode;
    this.arguments = { ...(options.arguments ?? {}) };
  }

  /** True when `other` would be accepted as a re-declaration of this exchange. */
  sameDeclaration(other: Exchange): boolean {
    return (
      this.name === other.name &&
      this.type === other.type &&
      this.durable === other.durable &&
      this.autoDelete === other.autoDelete &&
      this.internal === other.internal &&
      stableJson(this.arguments) === stableJson(other.arguments)
    );
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      type: this.type,
      durable: this.durable,
      autoDelete: this.autoDelete,
      internal: this.internal,
      deliveryMode: this.deliveryMode ?? null,
      arguments: this.arguments,
    };
  }
}
brandClass(Exchange, '@kq/core:Exchange');

/** JSON with sorted keys, to compare argument tables regardless of insertion order. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
