import { routeMessage, type Exchange, type Headers, type Queue } from '@kq/core';

export interface QueueBindingRecord {
  queue: string;
  exchange: string;
  routingKey: string;
  arguments: Readonly<Record<string, unknown>>;
}

export interface ExchangeBindingRecord {
  destination: string;
  source: string;
  routingKey: string;
  arguments: Readonly<Record<string, unknown>>;
}

export type TopologyEntry =
  | { kind: 'exchange'; exchange: Exchange }
  | { kind: 'queue'; queue: Queue }
  | { kind: 'queueBinding'; binding: QueueBindingRecord }
  | { kind: 'exchangeBinding'; binding: ExchangeBindingRecord };

/**
 * What was declared through the transport, so it can be declared again after a reconnect (exclusive and
 * auto-delete queues die with their connection; a restarted broker forgets transient entities). Deletions and
 * unbinds through the transport remove entries. Server-named queues (`amq.gen-…`) cannot be re-declared by name
 * and are not recorded.
 */
export class Topology {
  readonly #exchanges = new Map<string, Exchange>();
  readonly #queues = new Map<string, Queue>();
  readonly #queueBindings = new Map<string, QueueBindingRecord>();
  readonly #exchangeBindings = new Map<string, ExchangeBindingRecord>();

  addExchange(exchange: Exchange): void {
    if (exchange.name !== '') this.#exchanges.set(exchange.name, exchange);
  }

  exchange(name: string): Exchange | undefined {
    return this.#exchanges.get(name);
  }

  removeExchange(name: string): void {
    this.#exchanges.delete(name);
    for (const [key, binding] of this.#queueBindings) if (binding.exchange === name) this.#queueBindings.delete(key);
    for (const [key, binding] of this.#exchangeBindings) {
      if (binding.source === name || binding.destination === name) this.#exchangeBindings.delete(key);
    }
  }

  addQueue(queue: Queue): void {
    if (queue.name === '' || queue.name.startsWith('amq.gen-')) return;
    this.#queues.set(queue.name, queue);
  }

  queue(name: string): Queue | undefined {
    return this.#queues.get(name);
  }

  removeQueue(name: string): void {
    this.#queues.delete(name);
    for (const [key, binding] of this.#queueBindings) if (binding.queue === name) this.#queueBindings.delete(key);
  }

  hasQueueBinding(binding: QueueBindingRecord): boolean {
    return this.#queueBindings.has(queueBindingKey(binding));
  }

  addQueueBinding(binding: QueueBindingRecord): void {
    if (binding.queue.startsWith('amq.gen-')) return;
    this.#queueBindings.set(queueBindingKey(binding), binding);
  }

  removeQueueBinding(binding: QueueBindingRecord): void {
    this.#queueBindings.delete(queueBindingKey(binding));
  }

  hasExchangeBinding(binding: ExchangeBindingRecord): boolean {
    return this.#exchangeBindings.has(exchangeBindingKey(binding));
  }

  addExchangeBinding(binding: ExchangeBindingRecord): void {
    this.#exchangeBindings.set(exchangeBindingKey(binding), binding);
  }

  /** Queues bound to `exchange` with exactly `routingKey` (where a delayed message for that pair must land). */
  queuesBoundTo(exchange: string, routingKey: string): string[] {
    return [...this.#queueBindings.values()].filter((binding) => binding.exchange === exchange && binding.routingKey === routingKey).map((binding) => binding.queue);
  }

  /**
   * The declared queues a message published to `exchange` with `routingKey` reaches, as far as what was declared
   * through this transport tells (an exchange it did not declare is taken as direct; exchange-to-exchange bindings
   * are not followed). For explaining a refused publish, not for routing.
   */
  queuesRoutedTo(exchange: string, routingKey: string, headers: Headers = {}): Queue[] {
    const names = exchange === '' ? [routingKey] : routeMessage(this.#exchanges.get(exchange)?.type ?? 'direct', this.bindingsOn(exchange), routingKey, headers);
    return names.map((name) => this.#queues.get(name)).filter((queue) => queue !== undefined);
  }

  /** Queue bindings on one exchange. */
  bindingsOn(exchange: string): QueueBindingRecord[] {
    return [...this.#queueBindings.values()].filter((binding) => binding.exchange === exchange);
  }

  /** Bindings of one queue, to re-create them after the queue itself is declared again. */
  bindingsOf(queue: string): QueueBindingRecord[] {
    return [...this.#queueBindings.values()].filter((binding) => binding.queue === queue);
  }

  /** Everything, in an order the broker accepts: exchanges, then queues, then bindings between them. */
  entries(): TopologyEntry[] {
    return [
      ...[...this.#exchanges.values()].map((exchange) => ({ kind: 'exchange', exchange }) as const),
      ...[...this.#queues.values()].map((queue) => ({ kind: 'queue', queue }) as const),
      ...[...this.#queueBindings.values()].map((binding) => ({ kind: 'queueBinding', binding }) as const),
      ...[...this.#exchangeBindings.values()].map((binding) => ({ kind: 'exchangeBinding', binding }) as const),
    ];
  }
}

/** JSON with object keys sorted, so argument tables compare regardless of insertion order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) && !Buffer.isBuffer(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function queueBindingKey(binding: QueueBindingRecord): string {
  return canonicalJson([binding.queue, binding.exchange, binding.routingKey, binding.arguments]);
}

function exchangeBindingKey(binding: ExchangeBindingRecord): string {
  return canonicalJson([binding.destination, binding.source, binding.routingKey, binding.arguments]);
}
