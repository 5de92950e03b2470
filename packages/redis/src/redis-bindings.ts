import {
  Exchange,
  headersMatch,
  kombuTopicPattern,
  stableJson,
  type BindingRecord,
  type ExchangeType,
} from '@kq/core';
import type { RedisClient } from './connection-factory';
import { InferredExchange } from './inferred-exchange';
import type { KeyLayout } from './key-layout';

/**
 * Exchanges and bindings on Redis, where Kombu keeps them: a binding is a member of the exchange's
 * `_kombu.binding.<exchange>` set (`routing key␆␆pattern␆␆queue`, the pattern a topic regex or, for kq's headers
 * exchanges, the binding arguments as JSON); kq adds the declarations (`exchanges`, which Kombu does not store) and
 * two indexes per queue (the exchanges it is bound to, and its fanout bindings) so deleting a queue and following
 * fanout never scan the keyspace.
 */
export class RedisBindings {
  readonly #commands: () => RedisClient;
  readonly #layout: KeyLayout;
  /** Exchange types seen, so a binding's member is written without a lookup each time. */
  readonly #types = new Map<string, ExchangeType>();
  /** Per exchange: the binding-set read under way, and the one to follow it that calls made meanwhile share. */
  readonly #reads = new Map<string, { current: Promise<string[]>; next?: Promise<string[]> }>();

  constructor(commands: () => RedisClient, layout: KeyLayout) {
    this.#commands = commands;
    this.#layout = layout;
  }

  async declareExchange(exchange: Exchange): Promise<void> {
    await this.#commands().hset(this.#layout.key('exchanges'), exchange.name, JSON.stringify(exchange.toJSON()));
    this.#types.set(exchange.name, exchange.type);
  }

  /** A declaration a kq process stored (Kombu stores none). See `inferExchange` for Python-only exchanges. */
  async lookupExchange(name: string): Promise<Exchange | undefined> {
    const stored = await this.#commands().hget(this.#layout.key('exchanges'), name);
    const exchange = stored === null ? undefined : parseExchange(name, stored);
    if (exchange) this.#types.set(name, exchange.type);
    return exchange;
  }

  /** An exchange known only from its Kombu binding set (declared by a Python process), with a guessed type. */
  async inferExchange(name: string): Promise<Exchange | undefined> {
    const members = await this.#commands().smembers(this.#layout.bindingKey(name));
    if (members.length === 0) return undefined;
    const patterns = members.map((member) => this.#layout.parseBindingMember(member)?.pattern ?? '');
    const type: ExchangeType = patterns.some((pattern) => pattern.startsWith('^'))
      ? 'topic'
      : patterns.some((pattern) => pattern.startsWith('{'))
        ? 'headers'
        : 'direct';
    if (!this.#types.has(name)) this.#types.set(name, type);
    return new InferredExchange(name, type);
  }

  async deleteExchange(name: string): Promise<void> {
    await this.#commands().multi().hdel(this.#layout.key('exchanges'), name).del(this.#layout.bindingKey(name)).exec();
    this.#types.delete(name);
  }

  async addBinding(exchange: string, binding: BindingRecord): Promise<void> {
    const { member, type } = await this.#member(exchange, binding);
    const transaction = this.#commands()
      .multi()
      .sadd(this.#layout.bindingKey(exchange), member)
      .sadd(this.#layout.boundExchangesKey(binding.queue), exchange);
    if (type === 'fanout') transaction.sadd(this.#layout.fanoutBindingsKey(binding.queue), exchange + this.#layout.sep + binding.routingKey);
    await transaction.exec();
  }

  async removeBinding(exchange: string, binding: BindingRecord): Promise<void> {
    const { member } = await this.#member(exchange, binding);
    await this.#commands()
      .multi()
      .srem(this.#layout.bindingKey(exchange), member)
      .srem(this.#layout.fanoutBindingsKey(binding.queue), exchange + this.#layout.sep + binding.routingKey)
      .exec();
  }

  /** The fanout bindings of a queue that kq processes declared (exchange, binding key). */
  async fanoutBindingsOf(queue: string): Promise<Array<{ exchange: string; routingKey: string }>> {
    const members = await this.#commands().smembers(this.#layout.fanoutBindingsKey(queue));
    return members.map((member) => {
      const at = member.lastIndexOf(this.#layout.sep);
      return { exchange: member.slice(0, at), routingKey: member.slice(at + this.#layout.sep.length) };
    });
  }

  async listBindings(exchange: string): Promise<readonly BindingRecord[]> {
    const members = await this.#bindingMembers(exchange);
    const records: BindingRecord[] = [];
    for (const member of members) {
      const parsed = this.#layout.parseBindingMember(member);
      if (!parsed) continue;
      records.push({ queue: parsed.queue, routingKey: parsed.routingKey, arguments: bindingArguments(parsed.pattern) });
    }
    return records;
  }

  /**
   * The members of an exchange's binding set. A call made while a read of that set is under way waits for one more
   * read, sent when that one ends, and shares it with every call made meanwhile: each call sees a read sent after it
   * was made (never a stale set), while a burst of publishes to one exchange (a worker's replies to a dashboard's
   * inspect round) costs two SMEMBERS instead of one each.
   */
  #bindingMembers(exchange: string): Promise<string[]> {
    const reads = this.#reads.get(exchange);
    const read = (): Promise<string[]> => this.#commands().smembers(this.#layout.bindingKey(exchange));
    if (!reads) {
      const current = read().finally(() => this.#readDone(exchange, current));
      this.#reads.set(exchange, { current });
      return current;
    }
    reads.next ??= reads.current
      .catch(() => undefined)
      .then(() => {
        const next = reads.next as Promise<string[]>;
        reads.current = next;
        reads.next = undefined;
        return read().finally(() => this.#readDone(exchange, next));
      });
    return reads.next;
  }

  #readDone(exchange: string, read: Promise<string[]>): void {
    const reads = this.#reads.get(exchange);
    if (reads && reads.current === read && !reads.next) this.#reads.delete(exchange);
  }

  /**
   * The queues a delivery published to (exchange, routing key) is restored to, the way Kombu's `_lookup` finds them
   * from the binding set alone: '' routes to the queue named by the key; a member with a topic regex matches by it
   * (Kombu's regex), a headers member by the headers, any other by equal routing key.
   */
  async routeForRestore(exchange: string, routingKey: string, headers: Record<string, unknown>): Promise<string[]> {
    if (exchange === '') return routingKey === '' ? [] : [routingKey];
    const queues = new Set<string>();
    for (const member of await this.#commands().smembers(this.#layout.bindingKey(exchange))) {
      const parsed = this.#layout.parseBindingMember(member);
      if (!parsed) continue;
      const { pattern } = parsed;
      let hit: boolean;
      if (pattern.startsWith('^')) hit = kombuRegex(pattern)?.test(routingKey) ?? false;
      else if (pattern.startsWith('{')) hit = headersMatch(bindingArguments(pattern), headers);
      else hit = parsed.routingKey === routingKey;
      if (hit) queues.add(parsed.queue);
    }
    return [...queues];
  }

  async #member(exchange: string, binding: BindingRecord): Promise<{ member: string; type: ExchangeType }> {
    let type = this.#types.get(exchange);
    if (type === undefined) type = (await this.lookupExchange(exchange))?.type ?? 'direct';
    const pattern =
      type === 'topic'
        ? kombuTopicPattern(binding.routingKey)
        : type === 'headers'
          ? stableJson(binding.arguments)
          : '';
    return { member: this.#layout.bindingMember({ routingKey: binding.routingKey, pattern, queue: binding.queue }), type };
  }

  /**
   * Deleting a queue removes its bindings everywhere, as on AMQP (Kombu only removes the one it declared): on every
   * exchange a kq process bound it to, and on every exchange a kq process declared (which covers bindings a Python
   * process made there). Found through those two indexes rather than by scanning the keyspace, which on a Redis
   * holding millions of results would make every worker shutdown (its pidbox queue goes) a full scan.
   */
  async removeBindingsOf(queue: string): Promise<void> {
    const commands = this.#commands();
    const [bound, declared] = await Promise.all([commands.smembers(this.#layout.boundExchangesKey(queue)), commands.hkeys(this.#layout.key('exchanges'))]);
    const exchanges = [...new Set([...bound, ...declared])];
    if (exchanges.length === 0) return;
    const lookup = commands.pipeline();
    for (const exchange of exchanges) lookup.smembers(this.#layout.bindingKey(exchange));
    const members = (await lookup.exec()) ?? [];
    const removal = commands.pipeline();
    let stale = 0;
    exchanges.forEach((exchange, index) => {
      const [error, value] = members[index] ?? [null, []];
      if (error) throw error;
      const ofQueue = (value as string[]).filter((member) => this.#layout.parseBindingMember(member)?.queue === queue);
      if (ofQueue.length === 0) return;
      removal.srem(this.#layout.bindingKey(exchange), ...ofQueue);
      stale += ofQueue.length;
    });
    if (stale > 0) await removal.exec();
  }
}

function parseExchange(name: string, stored: string): Exchange | undefined {
  try {
    const value = JSON.parse(stored) as {
      type?: ExchangeType;
      durable?: boolean;
      autoDelete?: boolean;
      internal?: boolean;
      deliveryMode?: 1 | 2 | null;
      arguments?: Record<string, unknown>;
    };
    return new Exchange(name, {
      ...(value.type ? { type: value.type } : {}),
      ...(value.durable === undefined ? {} : { durable: value.durable }),
      ...(value.autoDelete === undefined ? {} : { autoDelete: value.autoDelete }),
      ...(value.internal === undefined ? {} : { internal: value.internal }),
      ...(value.deliveryMode ? { deliveryMode: value.deliveryMode } : {}),
      arguments: value.arguments ?? {},
    });
  } catch {
    return undefined;
  }
}

/** Headers-exchange members carry their binding arguments as JSON where Kombu puts a topic regex. */
function bindingArguments(pattern: string): Record<string, unknown> {
  if (!pattern.startsWith('{')) return {};
  try {
    const value = JSON.parse(pattern) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const regexCache = new Map<string, RegExp | null>();

/** Kombu's topic regexes are Python `re` syntax; the subset Kombu writes means the same in JavaScript. */
function kombuRegex(pattern: string): RegExp | null {
  let regex = regexCache.get(pattern);
  if (regex === undefined) {
    try {
      regex = new RegExp(pattern);
    } catch {
      regex = null;
    }
    if (regexCache.size > 10_000) regexCache.clear();
    regexCache.set(pattern, regex);
  }
  return regex;
}
