import { KqError, LamportClock, Producer, type Connection, type Exchange } from '@kq/core';
import { anonNodename } from '../protocol/index';
import { createEvent, eventGroup, eventRoutingKey, type CeleryEvent } from './event';
import { DEFAULT_EVENT_EXCHANGE, eventExchange } from './event-exchange';

export interface EventDispatcherOptions {
  /** Who sends: a worker's node name; clients default to `gen<pid>@<host>` as Celery's `anon_nodename()`. */
  hostname?: string;
  /** The app Lamport clock every event is stamped with (`forward()`); docs/wire.md#lamport-clocks. */
  clock?: LamportClock;
  /**
   * Only events of these groups are sent (`worker`, `task`); empty or null = every group. A worker without task
   * events uses `['worker']` so heartbeats still flow for monitors and gossip.
   */
  groups?: Iterable<string> | null;
  /** A disabled dispatcher sends nothing. Default true. */
  enabled?: boolean;
  /** Celery's `event_exchange` (default `celeryev`). */
  exchange?: string;
  /** Celery's `event_serializer` (default `json`). */
  serializer?: string;
  /** Events are transient (1), as Celery sends them. */
  deliveryMode?: 1 | 2;
  /** The `pid` field (default this process). */
  pid?: number;
  /** Events waiting to be published before new ones are dropped (a broker outage must not grow memory). Default 1000. */
  maxPending?: number;
  /** Told about every event that could not be published (or was dropped); the caller logs it. Never throws. */
  onError?: (error: Error, event: CeleryEvent) => void;
}

export interface SendOptions {
  /** Do not stamp the clock (`clock: null`), like Celery's `blind=True`. */
  blind?: boolean;
  /** Retry a failed publish by the connection's policy. Default false: an event is not worth blocking for. */
  retry?: boolean;
}

/**
 * Celery's `EventDispatcher`: publishes events to the event exchange with routing key = type (`-` → `.`), headers
 * `{hostname}`, delivery mode 1 — each stamped with the app clock's `forward()` at the moment `send()` is called, so
 * the clocks of one process's events follow the order it sent them in.
 *
 * `send()` never throws and never waits for the broker: events are published in order in the background, failures
 * go to `onError`, and past `maxPending` queued events new ones are dropped. A worker must not stop, or slow down,
 * because its monitoring cannot be delivered.
 */
export class EventDispatcher {
  readonly connection: Connection;
  readonly hostname: string;
  readonly clock: LamportClock;
  readonly exchangeName: string;
  /** The groups sent; empty = all. Mutable: `enable_events` adds `task`, `disable_events` removes it. */
  readonly groups: Set<string>;
  readonly pid: number;
  enabled: boolean;
  /** Events dropped because too many were waiting for the broker. */
  dropped = 0;
  readonly #producer: Producer;
  readonly #serializer: string;
  readonly #deliveryMode: 1 | 2;
  readonly #maxPending: number;
  readonly #onError: ((error: Error, event: CeleryEvent) => void) | undefined;
  #exchange: Promise<Exchange> | undefined;
  #tail: Promise<void> = Promise.resolve();
  #pending = 0;

  constructor(connection: Connection, options: EventDispatcherOptions = {}) {
    this.connection = connection;
    this.hostname = options.hostname ?? anonNodename();
    this.clock = options.clock ?? new LamportClock();
    this.exchangeName = options.exchange ?? DEFAULT_EVENT_EXCHANGE;
    this.groups = new Set(options.groups ?? []);
    this.enabled = options.enabled ?? true;
    this.pid = options.pid ?? process.pid;
    this.#serializer = options.serializer ?? 'json';
    this.#deliveryMode = options.deliveryMode ?? 1;
    this.#maxPending = options.maxPending ?? 1000;
    this.#onError = options.onError;
    this.#producer = new Producer(connection, { serializer: this.#serializer, autoDeclare: false });
  }

  /** True when events of `type` pass the group filter (and the dispatcher is enabled). */
  accepts(type: string): boolean {
    return this.acceptsGroup(eventGroup(type));
  }

  /** Whether events of `group` (`task`, `worker`) are sent now: asked before building an event that may not be. */
  acceptsGroup(group: string): boolean {
    return this.enabled && (this.groups.size === 0 || this.groups.has(group));
  }

  /**
   * Stamps and queues an event for publishing, unless the dispatcher is disabled or the event's group is filtered
   * out. Returns the event as it will be sent (undefined when not sent).
   */
  send(type: string, fields: Readonly<Record<string, unknown>> = {}, options: SendOptions = {}): CeleryEvent | undefined {
    if (!this.accepts(type)) return undefined;
    const event = this.#stamp(type, fields, options.blind ?? false);
    if (this.#pending >= this.#maxPending) {
      this.dropped++;
      this.#report(new KqError(`Dropped event ${type}: ${this.#pending} events are still waiting for the broker.`), event);
      return event;
    }
    this.#pending++;
    this.#tail = this.#tail
      .then(() => this.#publish(event, options.retry ?? false))
      .catch((error: unknown) => this.#report(asError(error, `Could not publish event ${type}`), event))
      .finally(() => {
        this.#pending--;
      });
    return event;
  }

  /** Publishes one event now, whatever the groups say; rejects if the broker does not take it (Celery's `publish`). */
  async publish(type: string, fields: Readonly<Record<string, unknown>> = {}, options: SendOptions = {}): Promise<CeleryEvent> {
    const event = this.#stamp(type, fields, options.blind ?? false);
    await this.#publish(event, options.retry ?? false);
    return event;
  }

  /** Resolves once every event sent so far was published or given up on (or `timeoutMs` passed). */
  async flush(timeoutMs = 5000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    });
    await Promise.race([this.#tail, timeout]);
    if (timer) clearTimeout(timer);
  }

  /** Waits for queued events (up to `timeoutMs`) and disables the dispatcher. */
  async close(timeoutMs = 5000): Promise<void> {
    await this.flush(timeoutMs);
    this.enabled = false;
  }

  #stamp(type: string, fields: Readonly<Record<string, unknown>>, blind: boolean): CeleryEvent {
    return createEvent(type, fields, { hostname: this.hostname, pid: this.pid, clock: blind ? null : this.clock.forward() });
  }

  async #publish(event: CeleryEvent, retry: boolean): Promise<void> {
    const exchange = await this.#resolveExchange();
    await this.#producer.publish(event, {
      exchange,
      routingKey: eventRoutingKey(event.type),
      headers: { hostname: this.hostname },
      deliveryMode: this.#deliveryMode,
      serializer: this.#serializer,
      declare: [exchange],
      retry,
    });
  }

  #resolveExchange(): Promise<Exchange> {
    if (!this.#exchange) {
      const pending = this.connection.transport().then((transport) => eventExchange(transport.capabilities, this.exchangeName));
      pending.catch(() => {
        if (this.#exchange === pending) this.#exchange = undefined; // try again with the next event
      });
      this.#exchange = pending;
    }
    return this.#exchange;
  }

  #report(error: Error, event: CeleryEvent): void {
    try {
      this.#onError?.(error, event);
    } catch {
      // a failing error handler must not break the sender either
    }
  }
}

function asError(error: unknown, context: string): Error {
  const message = error instanceof Error ? error.message : String(error);
  return new KqError(`${context}: ${message}`, { cause: error });
}
