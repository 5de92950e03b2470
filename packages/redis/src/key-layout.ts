import { KqError } from '@kq/core';

/** Kombu's separator between a queue name and its priority step, and between binding member parts. */
export const KOMBU_SEP = '\x06\x16';

/** The names of the fixed keys, before `globalKeyprefix` is applied. */
export interface KeyNames {
  /** Kombu's hash tag → `[envelope, exchange, routing_key]`. */
  unacked: string;
  /**
   * Kombu's zset tag → delivery time (seconds); for a delivery a kq consumer holds, its lease deadline minus the
   * visibility timeout (see lua/prelude.lua).
   */
  unackedIndex: string;
  /** Kombu's visibility-sweep mutex. */
  unackedMutex: string;
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
  /**
   * kq: zset of the in-flight lists of native claims under way (member `[list, queue list]`, score the epoch ms it was
   * registered); each list is this name with `.<process token>.<n>` appended (see native-claim.ts).
   */
  inflight: string;
}

export const DEFAULT_KEY_NAMES: KeyNames = {
  unacked: 'unacked',
  unackedIndex: 'unacked_index',
  unackedMutex: 'unacked_mutex',
  delayed: '_kq.delayed',
  delayedNudge: '_kq.delayed.nudge',
  quarantine: '_kq.quarantine',
  dead: '_kq.dead',
  exchanges: '_kq.exchanges',
  queues: '_kq.queues',
  inflight: '_kq.inflight',
};

/**
 * The structures a claim, settle, sweep or promotion touches together with a queue's lists. Kombu keeps one of each
 * for the whole database; the cluster layout keeps one per queue, in the queue's hash slot (see `scopedKey`).
 */
export type QueueScopedName = 'unacked' | 'unackedIndex' | 'unackedMutex' | 'delayed' | 'quarantine';

/**
 * The hash tag of kq's own shared keys in the cluster layout (exchanges, queue declarations, binding sets, the dead
 * letter list): one slot, so the transactions over them stay legal.
 */
export const CLUSTER_META_TAG = '{kq}';

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
  /**
   * kq's Redis Cluster layout (not Kombu's: Kombu has no cluster support): a queue's lists and its scoped structures
   * carry the hash tag `{queue}`, kq's shared keys the tag `{kq}`. Default false: Kombu's layout, key for key.
   */
  cluster?: boolean;
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

/**
 * Kombu's Redis key and channel names, key for key (docs/wire.md#redis-kombus-layout); with `cluster`, kq's Redis
 * Cluster layout instead.
 */
export class KeyLayout {
  readonly prefix: string;
  readonly sep: string;
  readonly steps: readonly number[];
  readonly fanoutPrefix: string;
  readonly fanoutPatterns: boolean;
  readonly names: KeyNames;
  readonly cluster: boolean;
  /** What goes before a kq-shared key name: the prefix, and in the cluster layout the `{kq}` tag. */
  readonly #shared: string;

  constructor(options: KeyLayoutOptions) {
    this.cluster = options.cluster ?? false;
    if (this.cluster && /[{}]/.test(options.prefix)) {
      throw new KqError(
        `Redis Cluster mode needs a global_keyprefix without "{" or "}" (got ${JSON.stringify(options.prefix)}): kq puts each ` +
          `queue's keys in a hash slot of its own with a {queue} tag, which braces in the prefix would override.`,
      );
    }
    this.#shared = this.cluster ? options.prefix + CLUSTER_META_TAG : options.prefix;
    this.prefix = options.prefix;
    this.sep = options.sep;
    this.steps = [...options.steps].sort((a, b) => a - b);
    this.fanoutPrefix = options.fanoutPrefix;
    this.fanoutPatterns = options.fanoutPatterns;
    this.names = options.names;
  }

  /** A fixed key (by name) with the prefix applied; in the cluster layout, in kq's shared slot. */
  key(name: keyof KeyNames): string {
    return this.#shared + this.names[name];
  }

  /**
   * The key of one of the structures scoped to `queue`, without the prefix. Kombu's layout has one for all queues
   * (the `queue` is ignored); the cluster layout has `name{queue}`, in the slot of the queue's lists.
   */
  scopedName(name: QueueScopedName, queue: string): string {
    return this.cluster ? `${this.names[name]}${this.#tag(queue)}` : this.names[name];
  }

  scopedKey(name: QueueScopedName, queue: string): string {
    return this.prefix + this.scopedName(name, queue);
  }

  /**
   * The list of `queue` for priority `step`, without the prefix: `q` for step 0, else `q SEP step` (Kombu); in the
   * cluster layout the queue is a hash tag, `{q}` and `{q} SEP step`.
   */
  listName(queue: string, step: number): string {
    const base = this.cluster ? this.#tag(queue) : queue;
    return step === 0 ? base : `${base}${this.sep}${step}`;
  }

  /**
   * `{queue}`: every key of the queue has it, so they share a slot. The slot is the hash of the text between the first
   * `{` and the first `}` after it, which an empty name or one starting with `}` would leave empty (the whole key
   * hashed: the queue's keys scattered), so those names are refused.
   */
  #tag(queue: string): string {
    if (queue === '' || queue.startsWith('}')) {
      throw new KqError(
        `Redis Cluster mode cannot place queue ${JSON.stringify(queue)}: its keys carry the hash tag {queue}, which must not be ` +
          `empty, so the name must not be empty or start with "}". Rename the queue.`,
      );
    }
    return `{${queue}}`;
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
    if (this.cluster && name.startsWith('{')) {
      // `{q}` or `{q} SEP step`: the queue ends at the last `}` (a step suffix has none)
      const close = name.lastIndexOf('}');
      const rest = name.slice(close + 1);
      const queue = name.slice(1, close);
      if (rest.startsWith(this.sep) && /^\d+$/.test(rest.slice(this.sep.length))) return { queue, step: Number(rest.slice(this.sep.length)) };
      return { queue, step: 0 };
    }
    const at = name.lastIndexOf(this.sep);
    if (at >= 0) {
      const suffix = name.slice(at + this.sep.length);
      if (/^\d+$/.test(suffix)) return { queue: name.slice(0, at), step: Number(suffix) };
    }
    return { queue: name, step: 0 };
  }

  bindingKey(exchange: string): string {
    return `${this.#shared}_kombu.binding.${exchange}`;
  }

  /**
   * kq: the set of `exchange SEP binding key` a queue is bound with to fanout exchanges, so a process that consumes
   * the queue without declaring it knows to listen on PUB/SUB (Kombu keeps that in each process's memory).
   */
  fanoutBindingsKey(queue: string): string {
    return `${this.#shared}_kq.fanout.${queue}`;
  }

  /**
   * kq: the exchanges a queue was ever bound to by a kq process, so deleting the queue finds its bindings without
   * scanning the keyspace (Kombu keeps no such index; its binding sets are keyed by exchange only).
   */
  boundExchangesKey(queue: string): string {
    return `${this.#shared}_kq.bound.${queue}`;
  }

  /**
   * kq, cluster layout only: the set of queues whose scoped records (claims, delayed messages) may exist, so every
   * process's sweeps and promoter find them without scanning every node's keyspace.
   */
  clusterQueuesKey(): string {
    return `${this.#shared}_kq.cluster.queues`;
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
