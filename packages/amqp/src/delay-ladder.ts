import { Exchange, KqError, Queue } from '@kq/core';
import type { DelayQueueType } from './options';
import type { ExchangeBindingRecord, QueueBindingRecord } from './topology';

/**
 * Delayed delivery exactly as Kombu 5.5+'s native delayed delivery lays it out (`kombu/transport/native_delayed_delivery.py`),
 * so kq and Celery 5.5+ share one ladder in a vhost and deliver each other's delayed messages:
 *
 *  - 28 levels `celery_delayed_27` … `celery_delayed_0`, each a durable **topic** exchange and a durable queue of the
 *    same name with `x-message-ttl` 2^L × 1000 ms, `x-overflow: reject-publish`, `x-queue-type` quorum or classic
 *    (quorum also `x-dead-letter-strategy: at-least-once`), dead-lettering to the next lower level's exchange and
 *    level 0 to the topic exchange `celery_delayed_delivery`.
 *  - The delay is in the routing key: 28 binary digits of the delay in whole seconds, dot-separated, most significant
 *    first, then the real routing key (`0.…0.1.0.1.orders`). A message is published to `celery_delayed_27`. Level L
 *    routes a message whose digit for L is 1 into its queue (binding `*.`×(27−L) `1.#`), and one whose digit is 0 on to
 *    level L−1's exchange (exchange-to-exchange binding `*.`×(27−L) `0.#`); `celery_delayed_0` hands 0s to the delivery
 *    exchange. Dead-lettering keeps the routing key, so the same walk continues below the level it waited in.
 *  - A target queue receives from `celery_delayed_delivery` through the binding key `#.<routing key>` (Kombu's
 *    `bind_queue_to_native_delayed_delivery_exchange`: the queue's topic/fanout exchange is bound to the delivery
 *    exchange and the queue to that exchange with that key). Kombu leaves direct exchanges out; kq binds such a
 *    queue (and a default-exchange queue) straight to the delivery exchange with the same key, which Celery's
 *    topology tolerates and which needs nothing from Python.
 *
 * Whole seconds only: kq rounds a delay up to the next second so a message never arrives early (a Celery worker
 * holds it for the rest of its ETA anyway). Kombu's optional name prefix (`<prefix>_celery_delayed_<L>`) is the
 * `delayLadderPrefix` option.
 */

/** Header naming the exchange a kq-published delayed message is really for (`''` for the default exchange). */
export const DELAY_TARGET_HEADER = 'kq-delay-exchange';

/** Kombu's MAX_NUMBER_OF_BITS_TO_USE. */
export const DELAY_BITS = 28;
/** The longest delay the ladder holds, in ms: 2^28 − 1 seconds (about 8.5 years). */
export const MAX_DELAY_MS = (2 ** DELAY_BITS - 1) * 1000;

const DELAY_PREFIX = new RegExp(`^(?:[01]\\.){${DELAY_BITS}}`);

/** Kombu's `calculate_routing_key`: 28 binary digits of `seconds`, dot-separated, then the real routing key. */
export function delayRoutingKey(seconds: number, routingKey: string): string {
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 2 ** DELAY_BITS - 1) {
    throw new KqError(`A ladder delay must be a whole number of seconds from 1 to ${2 ** DELAY_BITS - 1}, not ${seconds}.`);
  }
  if (routingKey === '') throw new KqError('A delayed message needs a non-empty routing key: the ladder routes by it.');
  // As Kombu does: a key that already carries a delay prefix (a retry of a delayed message) is not prefixed twice.
  const bare = routingKey.replace(DELAY_PREFIX, '');
  return `${[...seconds.toString(2).padStart(DELAY_BITS, '0')].join('.')}.${bare}`;
}

/** The delay (seconds) and real routing key of a ladder routing key; null for a key without the 28-digit prefix. */
export function parseDelayRoutingKey(key: string): { seconds: number; routingKey: string } | null {
  const match = DELAY_PREFIX.exec(key);
  if (!match) return null;
  return { seconds: Number.parseInt(match[0].replaceAll('.', ''), 2), routingKey: key.slice(match[0].length) };
}

/** Kombu's binding key for a target: the routing key as is when it starts with `#`, else `#.<key>`. */
export function deliveryBindingKey(routingKey: string): string {
  return routingKey.startsWith('#') ? routingKey : `#.${routingKey}`;
}

export interface DelayLevel {
  /** Name of both the level's exchange and its queue. */
  readonly name: string;
  readonly level: number;
  readonly ttlMs: number;
}

export interface DelayPlan {
  /** Where to publish: always the top level's exchange (`celery_delayed_27`), as Celery does. */
  exchange: string;
  /** The 28-digit delay, then the real routing key. */
  routingKey: string;
  /** The target header to add to the message. */
  headers: Record<string, string>;
  /** The delay the ladder applies, in ms (the requested one rounded up to whole seconds). */
  delayMs: number;
}

/** The names and shape of one ladder. Every client of a vhost (Celery 5.5+ too) shares the default one. */
export class DelayLadder {
  readonly prefix: string;
  /** Every level, longest first. */
  readonly levels: readonly DelayLevel[];
  readonly deliveryExchange: string;
  readonly #levelNames: ReadonlySet<string>;

  /** `prefix`: Kombu's optional prefix (`<prefix>_celery_delayed_<L>`); empty for Celery's default names. */
  constructor(prefix = '') {
    this.prefix = prefix;
    const named = (base: string): string => (prefix ? `${prefix}_${base}` : base);
    this.deliveryExchange = named('celery_delayed_delivery');
    this.levels = Array.from({ length: DELAY_BITS }, (_, index) => {
      const level = DELAY_BITS - 1 - index;
      return { name: named(`celery_delayed_${level}`), level, ttlMs: 2 ** level * 1000 };
    });
    this.#levelNames = new Set([...this.levels.map((level) => level.name), this.deliveryExchange]);
  }

  /** How a message for `targetExchange`/`routingKey` waits `delayMs`; null when there is nothing to wait. */
  plan(delayMs: number, targetExchange: string, routingKey: string): DelayPlan | null {
    if (!Number.isFinite(delayMs)) throw new KqError(`A publish delay must be a finite number of milliseconds, not ${delayMs}.`);
    if (delayMs <= 0) return null;
    const seconds = Math.ceil(delayMs / 1000);
    if (seconds * 1000 > MAX_DELAY_MS) {
      throw new KqError(`A delay of ${delayMs} ms is longer than the delay ladder holds (${MAX_DELAY_MS} ms, about 8.5 years). Publish it later instead.`);
    }
    return {
      exchange: (this.levels[0] as DelayLevel).name,
      routingKey: delayRoutingKey(seconds, routingKey),
      headers: { [DELAY_TARGET_HEADER]: targetExchange },
      delayMs: seconds * 1000,
    };
  }

  /** The ladder's entities, as Kombu's `declare_native_delayed_delivery_exchanges_and_queues` declares them. */
  entities(queueType: DelayQueueType): {
    exchanges: Exchange[];
    queues: Queue[];
    queueBindings: QueueBindingRecord[];
    exchangeBindings: ExchangeBindingRecord[];
  } {
    const exchanges = [...this.levels.map((level) => new Exchange(level.name, { type: 'topic', durable: true })), new Exchange(this.deliveryExchange, { type: 'topic', durable: true })];
    const queues: Queue[] = [];
    const queueBindings: QueueBindingRecord[] = [];
    const exchangeBindings: ExchangeBindingRecord[] = [];
    this.levels.forEach((level, index) => {
      const lower = this.levels[index + 1]?.name ?? this.deliveryExchange;
      const skip = '*.'.repeat(DELAY_BITS - 1 - level.level);
      queues.push(
        new Queue(level.name, {
          durable: true,
          arguments: {
            'x-queue-type': queueType,
            'x-overflow': 'reject-publish',
            'x-message-ttl': level.ttlMs,
            'x-dead-letter-exchange': lower,
            ...(queueType === 'quorum' ? { 'x-dead-letter-strategy': 'at-least-once' } : {}),
          },
        }),
      );
      queueBindings.push({ queue: level.name, exchange: level.name, routingKey: `${skip}1.#`, arguments: {} });
      exchangeBindings.push({ destination: lower, source: level.name, routingKey: `${skip}0.#`, arguments: {} });
    });
    return { exchanges, queues, queueBindings, exchangeBindings };
  }

  /** Whether `name` is one of this ladder's exchanges or queues. */
  isLadderName(name: string): boolean {
    return this.#levelNames.has(name);
  }

  /**
   * What a message delivered out of the ladder looked like when published: its real routing key (the delay digits
   * removed), its real exchange (kq's target header; for a message Celery put in the ladder, unknown), and its
   * headers without kq's target header and the ladder's `x-death` hops.
   */
  strip(headers: Record<string, unknown>, routingKey: string): { headers: Record<string, unknown>; exchange: string | undefined; routingKey: string } {
    const parsed = parseDelayRoutingKey(routingKey);
    if (!parsed && !(DELAY_TARGET_HEADER in headers)) return { headers, exchange: undefined, routingKey };
    const target = headers[DELAY_TARGET_HEADER];
    const out: Record<string, unknown> = { ...headers };
    delete out[DELAY_TARGET_HEADER];
    const deaths = out['x-death'];
    if (Array.isArray(deaths)) {
      const kept = deaths.filter((death) => !this.#isLadderDeath(death));
      if (kept.length > 0) out['x-death'] = kept;
      else delete out['x-death'];
    }
    for (const which of ['first', 'last'] as const) {
      const queue = out[`x-${which}-death-queue`];
      if (typeof queue === 'string' && this.isLadderName(queue)) {
        delete out[`x-${which}-death-queue`];
        delete out[`x-${which}-death-exchange`];
        delete out[`x-${which}-death-reason`];
      }
    }
    return { headers: out, exchange: typeof target === 'string' ? target : undefined, routingKey: parsed?.routingKey ?? routingKey };
  }

  #isLadderDeath(death: unknown): boolean {
    if (typeof death !== 'object' || death === null) return false;
    const queue = (death as { queue?: unknown }).queue;
    return typeof queue === 'string' && this.isLadderName(queue);
  }
}

/** Celery's ladder (`celery_delayed_*`, no prefix). */
export const DEFAULT_DELAY_LADDER = new DelayLadder();

/** How a message for `targetExchange`/`routingKey` waits `delayMs` in the default ladder. */
export function planDelay(delayMs: number, targetExchange: string, routingKey: string): DelayPlan | null {
  return DEFAULT_DELAY_LADDER.plan(delayMs, targetExchange, routingKey);
}
