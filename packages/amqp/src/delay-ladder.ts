import { Binding, Exchange, KqError, Queue } from '@kq/core';
import type { DelayQueueType } from './options';
import type { ExchangeBindingRecord, QueueBindingRecord } from './topology';

/**
 * Delayed delivery with no scheduler and no per-message queues: a fixed ladder of TTL queues, one per power of
 * two, that a message walks down by dead-lettering (the idea of Kombu's native delayed delivery, with kq's own
 * names so the two never meet).
 *
 *  - Second levels `kq_delayed_27` … `kq_delayed_0`: queue TTL 2^L × 1000 ms (level 27 ≈ 4.25 years; all 28 together
 *    hold a message up to ~8.5 years). A sub-second tier `kq_delayed_ms512` … `kq_delayed_ms1` (TTL 512 … 1 ms) takes
 *    the millisecond remainder, so delays are exact to the millisecond (no rounding up to whole seconds) and
 *    messages whose due times differ by less than a second still land in due order. Each level's queue
 *    dead-letters to the next lower level's exchange; the last one to `kq_delayed_delivery`.
 *  - Every level exchange is a **headers** exchange. A message carries a header `kq-delay-<level>: "1"` for each
 *    level it must wait in (the binary digits of its delay); the level's queue is bound with that header, so a
 *    message without it is unroutable there and falls through to the exchange's `alternate-exchange`, the next
 *    lower level. A message is published straight to the exchange of its highest level. Routing by headers leaves
 *    the routing key alone, so the message keeps its real one all the way down (Kombu encodes the delay into the
 *    routing key instead, and needs every target queue bound to its delivery exchange with `#.<key>`).
 *  - `kq_delayed_delivery` (headers) forwards by the header `kq-delay-exchange` over an exchange-to-exchange
 *    binding to the message's real exchange, which routes it with its real routing key — so direct, topic, fanout
 *    and headers targets and classic and quorum queues all work. The default exchange cannot be a binding
 *    destination, so its messages go on to `kq_delayed_to_queue` (direct), where a target queue is bound by name.
 *
 * RabbitMQ ignores binding arguments that start with `x-` when matching headers, hence the `kq-delay-` names.
 */

/** Header naming the exchange a delayed message is really for (`''` for the default exchange). */
export const DELAY_TARGET_HEADER = 'kq-delay-exchange';
const LEVEL_HEADER_PREFIX = 'kq-delay-';
export const DEFAULT_DELAY_LADDER_PREFIX = 'kq_delayed';

export const SECOND_LEVELS = 28;
const MILLISECOND_STEPS = [512, 256, 128, 64, 32, 16, 8, 4, 2, 1] as const;

/** The longest delay the ladder composes: every second level once plus 999 ms (about 8.5 years). */
export const MAX_DELAY_MS = (2 ** SECOND_LEVELS - 1) * 1000 + 999;

export interface DelayLevel {
  /** Name of both the level's exchange and its queue. */
  readonly name: string;
  /** Header that routes a message into this level's queue. */
  readonly header: string;
  readonly ttlMs: number;
}

export interface DelayPlan {
  /** Where to publish: the exchange of the longest level the message waits in. */
  exchange: string;
  /** The level headers (and the target header) to add to the message. */
  headers: Record<string, string>;
  /** The delay the ladder applies, in ms (the requested one rounded up to a whole millisecond). */
  delayMs: number;
}

export type DeliveryRoute =
  | { kind: 'exchangeBinding'; binding: ExchangeBindingRecord }
  | { kind: 'queueBinding'; binding: QueueBindingRecord };

/** The names and shape of one ladder. All kq clients of a vhost share the default one (`kq_delayed_*`). */
export class DelayLadder {
  readonly prefix: string;
  /** Every level, longest first — the order a message walks them. */
  readonly levels: readonly DelayLevel[];
  readonly deliveryExchange: string;
  readonly toQueueExchange: string;
  readonly #levelNames: ReadonlySet<string>;

  constructor(prefix: string = DEFAULT_DELAY_LADDER_PREFIX) {
    this.prefix = prefix;
    this.deliveryExchange = `${prefix}_delivery`;
    this.toQueueExchange = `${prefix}_to_queue`;
    this.levels = [
      ...Array.from({ length: SECOND_LEVELS }, (_, index) => {
        const level = SECOND_LEVELS - 1 - index;
        return { name: `${prefix}_${level}`, header: `${LEVEL_HEADER_PREFIX}${level}`, ttlMs: 2 ** level * 1000 };
      }),
      ...MILLISECOND_STEPS.map((ms) => ({ name: `${prefix}_ms${ms}`, header: `${LEVEL_HEADER_PREFIX}ms${ms}`, ttlMs: ms })),
    ];
    this.#levelNames = new Set(this.levels.map((level) => level.name));
  }

  /** How a message for `targetExchange` waits `delayMs`; null when there is nothing to wait. */
  plan(delayMs: number, targetExchange: string): DelayPlan | null {
    if (!Number.isFinite(delayMs)) throw new KqError(`A publish delay must be a finite number of milliseconds, not ${delayMs}.`);
    const total = Math.ceil(delayMs);
    if (total <= 0) return null;
    if (total > MAX_DELAY_MS) {
      throw new KqError(
        `A delay of ${total} ms is longer than the delay ladder composes (${MAX_DELAY_MS} ms, about 8.5 years). Publish it later instead.`,
      );
    }
    const seconds = Math.floor(total / 1000);
    const milliseconds = total - seconds * 1000;
    const headers: Record<string, string> = { [DELAY_TARGET_HEADER]: targetExchange };
    let exchange: string | undefined;
    for (const level of this.levels) {
      const used = level.ttlMs >= 1000 ? Math.floor(seconds / (level.ttlMs / 1000)) % 2 === 1 : (milliseconds & level.ttlMs) !== 0;
      if (!used) continue;
      headers[level.header] = '1';
      exchange ??= level.name;
    }
    return { exchange: exchange as string, headers, delayMs: total };
  }

  /** The ladder's entities. Shared by every client using the same prefix, so they must all declare them alike. */
  entities(queueType: DelayQueueType): { exchanges: Exchange[]; queues: Queue[]; exchangeBindings: ExchangeBindingRecord[] } {
    const exchanges: Exchange[] = [
      new Exchange(this.deliveryExchange, { type: 'headers', durable: true }),
      new Exchange(this.toQueueExchange, { type: 'direct', durable: true }),
    ];
    const queues: Queue[] = [];
    this.levels.forEach((level, index) => {
      const lower = this.levels[index + 1]?.name ?? this.deliveryExchange;
      const exchange = new Exchange(level.name, { type: 'headers', durable: true, arguments: { 'alternate-exchange': lower } });
      exchanges.push(exchange);
      queues.push(
        new Queue(level.name, {
          durable: true,
          messageTtl: level.ttlMs,
          deadLetterExchange: lower,
          bindings: [new Binding(exchange, '', { 'x-match': 'all', [level.header]: '1' })],
          // Quorum: at-least-once dead-lettering (a hop survives a broker crash), which needs reject-publish overflow.
          ...(queueType === 'quorum'
            ? { queueType: 'quorum' as const, arguments: { 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' } }
            : {}),
        }),
      );
    });
    // Messages for the default exchange go on to the to-queue exchange, where their target queue is bound by name.
    const toQueue: ExchangeBindingRecord = {
      destination: this.toQueueExchange,
      source: this.deliveryExchange,
      routingKey: '',
      arguments: { 'x-match': 'all', [DELAY_TARGET_HEADER]: '' },
    };
    return { exchanges, queues, exchangeBindings: [toQueue] };
  }

  /**
   * The binding that hands a due message to its real destination: exchange-to-exchange from the delivery exchange
   * to the real exchange, or for the default exchange a binding of the target queue (named by the routing key)
   * to the to-queue exchange.
   */
  deliveryRoute(targetExchange: string, routingKey: string): DeliveryRoute {
    if (targetExchange !== '') {
      return {
        kind: 'exchangeBinding',
        binding: {
          destination: targetExchange,
          source: this.deliveryExchange,
          routingKey: '',
          arguments: { 'x-match': 'all', [DELAY_TARGET_HEADER]: targetExchange },
        },
      };
    }
    return { kind: 'queueBinding', binding: { queue: routingKey, exchange: this.toQueueExchange, routingKey, arguments: {} } };
  }

  isLevelQueue(name: string): boolean {
    return this.#levelNames.has(name);
  }

  /**
   * Removes what the ladder added to a message's headers — the routing headers, and the `x-death` records and
   * `x-first-death-*` of its hops — so a kq consumer sees the headers that were published; and returns the real
   * exchange the message was published to (the delivery reports the exchange it was last dead-lettered to).
   */
  strip(headers: Record<string, unknown>): { headers: Record<string, unknown>; exchange: string | undefined } {
    if (!(DELAY_TARGET_HEADER in headers)) return { headers, exchange: undefined };
    const target = headers[DELAY_TARGET_HEADER];
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(headers)) if (!key.startsWith(LEVEL_HEADER_PREFIX)) out[key] = value;
    const deaths = out['x-death'];
    if (Array.isArray(deaths)) {
      const kept = deaths.filter((death) => !this.#isLevelDeath(death));
      if (kept.length > 0) out['x-death'] = kept;
      else delete out['x-death'];
    }
    for (const which of ['first', 'last'] as const) {
      const queue = out[`x-${which}-death-queue`];
      if (typeof queue === 'string' && this.isLevelQueue(queue)) {
        delete out[`x-${which}-death-queue`];
        delete out[`x-${which}-death-exchange`];
        delete out[`x-${which}-death-reason`];
      }
    }
    return { headers: out, exchange: typeof target === 'string' ? target : undefined };
  }

  #isLevelDeath(death: unknown): boolean {
    if (typeof death !== 'object' || death === null) return false;
    const queue = (death as { queue?: unknown }).queue;
    return typeof queue === 'string' && this.isLevelQueue(queue);
  }
}

/** The ladder every kq client uses unless told otherwise (`kq_delayed_*`). */
export const DEFAULT_DELAY_LADDER = new DelayLadder();

/** How a message for `targetExchange` waits `delayMs` in the default ladder. */
export function planDelay(delayMs: number, targetExchange: string): DelayPlan | null {
  return DEFAULT_DELAY_LADDER.plan(delayMs, targetExchange);
}
