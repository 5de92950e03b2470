import { randomUUID } from 'node:crypto';
import { Binding, Consumer, KqError, LamportClock, Queue, TypedEmitter, type Connection, type Delivery, type Mailbox } from '@kq/core';
import { adjustTimestamp, isEventLike, nowSeconds, type ReceivedEvent } from './event';
import { DEFAULT_EVENT_EXCHANGE, eventExchange } from './event-exchange';

/** One binding of the receiver's queue. */
export interface EventBinding {
  routingKey: string;
  /** Default: the event exchange. */
  exchange?: string;
}

/** Called with each processed event. */
export type EventHandler = (event: ReceivedEvent) => void;

export interface EventReceiverOptions {
  /** Handlers by event type (`task-succeeded`); `*` gets the types without a handler of their own. */
  handlers?: Readonly<Record<string, EventHandler>>;
  /** Binding key: `#` for every event (monitors), `worker.#` for worker events only. */
  routingKey?: string;
  /**
   * Several bindings instead of `routingKey`: each a binding key on the event exchange or, with `exchange`, on another
   * exchange declared the way the event exchange is (Gossip binds a few `worker.*` keys and kq's own notice exchange).
   */
  bindings?: readonly EventBinding[];
  /** The queue is `<queuePrefix>.<nodeId>`; a uuid by default. */
  nodeId?: string;
  /** Celery's `event_queue_prefix` (default `celeryev`). */
  queuePrefix?: string;
  /** Celery's `event_exchange` (default `celeryev`). */
  exchange?: string;
  /** `x-message-ttl` of the queue, seconds (Celery's `event_queue_ttl`, 5). */
  queueTtl?: number;
  /** `x-expires` of the queue, seconds (Celery's `event_queue_expires`, 60). */
  queueExpires?: number;
  /** The Lamport clock adjusted by received events: the app clock in a worker or monitor. */
  clock?: LamportClock;
  /** Content types accepted (default `['json']`). */
  accept?: readonly string[];
  /** Move timestamps into this host's zone (Celery does for monitors, not for gossip). Default true. */
  localize?: boolean;
  /** Cast the `heartbeat` command once consuming, so workers announce themselves at once (Celery does). */
  wakeup?: boolean;
  /** The mailbox the wake-up goes through (needed when `wakeup` is true). */
  mailbox?: Mailbox;
  /**
   * Replaces the default processing of each message (decoded body and delivery). Gossip uses it to look at the
   * routing key and headers before preparing the event with `eventFromMessage`.
   */
  onMessage?: (body: unknown, delivery: Delivery) => void;
}

export type EventReceiverEvents = {
  /** Every processed event, after the handlers ran. */
  event: [event: ReceivedEvent];
  /** A message that was not an event, or a handler that threw; the receiver carries on. */
  error: [error: Error];
};

/**
 * Celery's `EventReceiver`: an auto-deleting, non-durable queue `celeryev.<uuid>` bound to the event exchange, read
 * without acks. Bodies may be one event or a list of them (Python workers batch task events under `task.multi`).
 * Every event adjusts the clock per docs/wire.md#lamport-clocks: `task-sent` comes from a client whose clock is not
 * synchronised, so it is placed just before the local clock (`(value || 1) - 1`); any other event adjusts to its clock,
 * or forwards the local one when it has none.
 */
export class EventReceiver extends TypedEmitter<EventReceiverEvents> {
  readonly connection: Connection;
  readonly clock: LamportClock;
  readonly routingKey: string;
  readonly queueName: string;
  readonly handlers: Readonly<Record<string, EventHandler>>;
  readonly #options: EventReceiverOptions;
  #consumer: Consumer | undefined;
  #queue: Queue | undefined;

  constructor(connection: Connection, options: EventReceiverOptions = {}) {
    super();
    this.connection = connection;
    this.#options = options;
    this.clock = options.clock ?? new LamportClock();
    this.routingKey = options.routingKey ?? '#';
    this.handlers = options.handlers ?? {};
    this.queueName = `${options.queuePrefix ?? 'celeryev'}.${options.nodeId ?? randomUUID()}`;
  }

  /** The queue, once `start()` resolved the exchange type for the transport. */
  get queue(): Queue | undefined {
    return this.#queue;
  }

  get isConsuming(): boolean {
    return this.#consumer !== undefined;
  }

  /** Declares the queue, starts consuming and, with `wakeup`, asks every worker for a heartbeat. */
  async start(): Promise<void> {
    if (this.#consumer) return;
    const transport = await this.connection.transport();
    const exchangeName = this.#options.exchange ?? DEFAULT_EVENT_EXCHANGE;
    const bindings = (this.#options.bindings ?? [{ routingKey: this.routingKey }]).map(
      (binding) => new Binding(eventExchange(transport.capabilities, binding.exchange ?? exchangeName), binding.routingKey),
    );
    const queue = new Queue(this.queueName, {
      bindings,
      durable: false,
      autoDelete: true,
      messageTtl: (this.#options.queueTtl ?? 5) * 1000,
      expires: (this.#options.queueExpires ?? 60) * 1000,
    });
    const onMessage = this.#options.onMessage ?? ((body: unknown) => this.receive(body));
    const consumer = new Consumer(this.connection, {
      queues: [queue],
      noAck: true,
      accept: this.#options.accept ?? ['json'],
      onMessage: (body, delivery) => onMessage(body, delivery),
    });
    consumer.on('rejected', (_delivery, reason) => this.emit('error', reason));
    consumer.on('error', (error) => this.emit('error', error));
    await consumer.consume();
    this.#queue = queue;
    this.#consumer = consumer;
    if (this.#options.wakeup) await this.wakeupWorkers();
  }

  /** Casts `heartbeat` to every worker: each answers with an immediate `worker-heartbeat` event. */
  async wakeupWorkers(): Promise<void> {
    const mailbox = this.#options.mailbox;
    if (!mailbox) return;
    try {
      await mailbox.broadcast('heartbeat', { reply: false });
    } catch (error) {
      this.emit('error', asError(error, 'could not ask workers for a heartbeat'));
    }
  }

  /** Stops consuming and removes the queue. */
  async close(): Promise<void> {
    const consumer = this.#consumer;
    this.#consumer = undefined;
    if (!consumer) return;
    await consumer.cancel();
    // Deleted on purpose: the connection must not declare it again on every new channel. A stale one re-created the
    // queue (bound, with no consumer) and raced the broker's auto-delete, failing the new channel's declarations.
    if (this.#queue) this.connection.forget(this.#queue);
    // Virtual transports (Redis, memory) do not auto-delete; remove the queue and its bindings ourselves.
    await this.connection.ensure((channel) => channel.deleteQueue(this.queueName), { maxRetries: 0 }).catch(() => undefined);
  }

  /** Processes a decoded message body: one event, or a list of events. Malformed parts are reported and skipped. */
  receive(body: unknown): void {
    if (Array.isArray(body)) {
      for (const item of body) this.#process(item);
      return;
    }
    this.#process(body);
  }

  /**
   * Applies the clock rule to one raw event and fills `local_received` (and, with `localize`, moves `timestamp` into
   * this host's zone). Celery's `event_from_message`. The object is updated in place and returned.
   */
  eventFromMessage(body: Record<string, unknown> & { type: string }, options: { localize?: boolean } = {}): ReceivedEvent {
    return prepareEvent(body, this.clock, { localize: options.localize ?? this.#options.localize ?? true });
  }

  #process(raw: unknown): void {
    if (!isEventLike(raw)) {
      this.emit('error', new KqError(`Ignored a message on ${this.queueName} that is not an event: ${preview(raw)}`));
      return;
    }
    const event = this.eventFromMessage(raw);
    const handler = this.handlers[event.type] ?? this.handlers['*'];
    try {
      handler?.(event);
      this.emit('event', event);
    } catch (error) {
      this.emit('error', asError(error, `event handler for ${event.type} failed`));
    }
  }
}

/**
 * Celery's `event_from_message`: applies the clock rule to one raw event (docs/wire.md#lamport-clocks) and fills
 * `local_received`; with `localize`, moves `timestamp` into this host's zone. The object is updated in place and
 * returned.
 */
export function prepareEvent(
  body: Record<string, unknown> & { type: string },
  clock: LamportClock,
  options: { localize?: boolean } = {},
): ReceivedEvent {
  if (body.type === 'task-sent') {
    // Clients never sync their clocks, so theirs cannot be used: place the event just before ours.
    const value = (clock.value || 1) - 1;
    body['clock'] = value;
    clock.adjust(value);
  } else if (typeof body['clock'] === 'number' && Number.isFinite(body['clock'])) {
    clock.adjust(body['clock']);
  } else {
    body['clock'] = clock.forward();
  }
  if (options.localize ?? true) {
    const { utcoffset, timestamp } = body;
    if (typeof utcoffset === 'number' && typeof timestamp === 'number') body['timestamp'] = adjustTimestamp(timestamp, utcoffset);
  }
  body['local_received'] = nowSeconds();
  return body as ReceivedEvent;
}

function asError(error: unknown, context: string): Error {
  const message = error instanceof Error ? error.message : String(error);
  return new KqError(`${context}: ${message}`, { cause: error });
}

function preview(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
