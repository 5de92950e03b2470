/** Kombu's separator between a queue name and its priority step, and between binding member parts. */
export const KOMBU_SEP = '\x06\x16';

/** The names of the fixed keys, before `globalKeyprefix` is applied. */
export interface KeyNames {
  /** Kombu's hash tag → `[envelope, exchange, routing_key]`. */
  unacked: string;
  /** Kombu's zset tag → delivery time (seconds). */
  unackedIndex: string;
  /** Kombu's visibility-sweep mutex. */
  unackedMutex: string;
  /** kq: zset tag → lease deadline (ms) of deliveries a kq consumer holds. */
  leases: string;
  /** kq: hash tag → holder record of deliveries a kq consumer holds. */
  holders: string;
  /** kq: zset of delayed messages by due time (ms). */
  delayed: string;
  /** kq: PUB/SUB channel that tells promoters an earlier delayed message arrived. */
  delayedNudge: string;
  /** kq: list of envelopes kq could not read, with the reason (newest first). */
  quarantine: string;
  /** kq: list of rejected task messages whose queue has no dead-letter exchange, with the reason (newest first). */
  dead: string;
  /** kq: hash exchange name → declaration (Kombu keeps exchange types in process memory only). */
  exchanges: string;
  /** kq: hash queue name → declaration options (for dead-lettering and checkQueue across processes). */
  queues: string;
}

export const DEFAULT_KEY_NAMES: KeyNames = {
  unacked: 'unacked',
  unackedIndex: 'unacked_index',
  unackedMutex: 'unacked_mutex',
  leases: '_kq.leases',
  holders: '_kq.holders',
  delayed: '_kq.delayed',
  delayedNudge: '_kq.delayed.nudge',
  quarantine: '_kq.quarantine',
  dead: '_kq.dead',
  exchanges: '_kq.exchanges',
  queues: '_kq.queues',
};

export interface KeyLayoutOptions {
  /** Kombu's `global_keyprefix`: prepended verbatim to every key and PUB/SUB channel. */
  prefix: string;
  sep: string;
  /** Priority steps, ascending (Kombu's `priority_steps`). */
  steps: readonly number[];
  /** Kombu's fanout channel prefix: `/{db}.` by default, '' when `fanout_prefix` is false, or a custom string. */
  fanoutPrefix: string;
  /** Kombu's `fanout_patterns`: append the routing key to fanout channel names. */
  fanoutPatterns: boolean;
  names: KeyNames;
}

/** Where a list key came from: its queue and priority step. */
export interface ListKey {
  queue: string;
  step: number;
}

export interface BindingMember {
  routingKey: string;
  pattern: string;
  queue: string;
}

/** Kombu's Redis key and channel names, key for key (WIRE §2.2–2.8). */
export class KeyLayout {
  readonly prefix: string;
  readonly sep: string;
  readonly steps: readonly number[];
  readonly fanoutPrefix: string;
  readonly fanoutPatterns: boolean;
  readonly names: KeyNames;

  constructor(options: KeyLayoutOptions) {
    this.prefix = options.prefix;
    this.sep = options.sep;
    this.steps = [...options.steps].sort((a, b) => a - b);
    this.fanoutPrefix = options.fanoutPrefix;
    this.fanoutPatterns = options.fanoutPatterns;
    this.names = options.names;
  }

  /** A fixed key (by name) with the prefix applied. */
  key(name: keyof KeyNames): string {
    return this.prefix + this.names[name];
  }

  /** The list of `queue` for priority `step`, without the prefix: `q` for step 0, else `q SEP step`. */
  listName(queue: string, step: number): string {
    return step === 0 ? queue : `${queue}${this.sep}${step}`;
  }

  listKey(queue: string, step: number): string {
    return this.prefix + this.listName(queue, step);
  }

  /** Every list of a queue, in step order. */
  queueKeys(queue: string): string[] {
    return this.steps.map((step) => this.listKey(queue, step));
  }

  /** The keys one BRPOP lists: priority-major, then the queues in the order given (Kombu's `_brpop_start`). */
  consumeKeys(queues: readonly string[]): { keys: string[]; origin: Map<string, ListKey> } {
    const keys: string[] = [];
    const origin = new Map<string, ListKey>();
    for (const step of this.steps) {
      for (const queue of queues) {
        const key = this.listKey(queue, step);
        keys.push(key);
        origin.set(key, { queue, step });
      }
    }
    return { keys, origin };
  }

  /** The step a list key belongs to, for keys not made here: Kombu's `rsplit(sep, 1)` on the unprefixed key. */
  parseListKey(key: string): ListKey {
    const name = key.startsWith(this.prefix) ? key.slice(this.prefix.length) : key;
    const at = name.lastIndexOf(this.sep);
    if (at >= 0) {
      const suffix = name.slice(at + this.sep.length);
      if (/^\d+$/.test(suffix)) return { queue: name.slice(0, at), step: Number(suffix) };
    }
    return { queue: name, step: 0 };
  }

  bindingKey(exchange: string): string {
    return `${this.prefix}_kombu.binding.${exchange}`;
  }

  /**
   * kq: the set of `exchange SEP binding key` a queue is bound with to fanout exchanges, so a process that consumes
   * the queue without declaring it knows to listen on PUB/SUB (Kombu keeps that in each process's memory).
   */
  fanoutBindingsKey(queue: string): string {
    return `${this.prefix}_kq.fanout.${queue}`;
  }

  /**
   * kq: the exchanges a queue was ever bound to by a kq process, so deleting the queue finds its bindings without
   * scanning the keyspace (Kombu keeps no such index; its binding sets are keyed by exchange only).
   */
  boundExchangesKey(queue: string): string {
    return `${this.prefix}_kq.bound.${queue}`;
  }

  /** kq: the remembered reply of one settle script call (expires after 2 minutes), see lua-scripts.ts. */
  requestKey(requestId: string): string {
    return `${this.prefix}_kq.request.${requestId}`;
  }

  bindingMember(member: BindingMember): string {
    return [member.routingKey, member.pattern, member.queue].join(this.sep);
  }

  /** Splits a member into routing key (before the first SEP), queue (after the last) and pattern (between). */
  parseBindingMember(member: string): BindingMember | undefined {
    const first = member.indexOf(this.sep);
    const last = member.lastIndexOf(this.sep);
    if (first < 0 || last === first) return undefined;
    return {
      routingKey: member.slice(0, first),
      pattern: member.slice(first + this.sep.length, last),
      queue: member.slice(last + this.sep.length),
    };
  }

  /** Kombu's `_get_publish_topic`: `{prefix}/{db}.{exchange}[/{routing key}]`. */
  publishChannel(exchange: string, routingKey: string): string {
    const suffix = routingKey && this.fanoutPatterns ? `/${routingKey}` : '';
    return `${this.prefix}${this.fanoutPrefix}${exchange}${suffix}`;
  }

  /** Kombu's subscribe topic: the publish channel built from the binding key with `#` replaced by `*` (a PSUBSCRIBE glob). */
  subscribePattern(exchange: string, bindingKey: string): string {
    return this.publishChannel(exchange, bindingKey.replace(/#/g, '*'));
  }

  /**
   * What a kq subscriber PSUBSCRIBEs to. A non-empty binding key filters as in Kombu (`worker.#` hears
   * `…/worker.*` only). An empty binding key — what a plain fanout binding has — hears every routing key, as fanout
   * does on AMQP: Kombu's own pattern (`{prefix}/{db}.{exchange}`, messages published without a routing key) and
   * `…/{exchange}/*` (those published with one), two disjoint globs so nothing arrives twice.
   */
  subscribePatterns(exchange: string, bindingKey: string): string[] {
    const kombu = this.subscribePattern(exchange, bindingKey);
    if (bindingKey !== '' || !this.fanoutPatterns) return [kombu];
    return [kombu, `${kombu}/*`];
  }
}
