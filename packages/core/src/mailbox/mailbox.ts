import { randomUUID } from 'node:crypto';
import { BoundedMap } from '../bounded-map';
import type { Connection } from '../connection';
import { Consumer } from '../consumer';
import { Exchange } from '../exchange';
import { LamportClock } from '../lamport-clock';
import { UnroutableError } from '../errors';
import type { Delivery } from '../message';
import { Producer } from '../producer';
import { Queue } from '../queue';
import { MailboxNode, type MailboxHandler, type NodeMailbox } from './mailbox-node';
import type { MailboxRequest } from './mailbox-request';
import type { NodeMatcher } from './node-matcher';

/** One reply: `{ "<nodename>": <value> }`. */
export type MailboxReply = Record<string, unknown>;

export interface MailboxOptions {
  /** Celery's `control_exchange` (default `celery`): exchanges `<ns>.pidbox` and `reply.<ns>.pidbox`. */
  namespace?: string;
  /** The mailbox's own Lamport clock — not the app clock (docs/wire.md#lamport-clocks). */
  clock?: LamportClock;
  serializer?: string;
  accept?: readonly string[];
  /** Routing key of this client's reply queue; any unique string (Kombu uses a uuid3 "oid"). */
  oid?: string;
  /** Node and reply queue `x-message-ttl` (ms). Celery: 300 s. */
  queueTtl?: number;
  /** Node and reply queue `x-expires` (ms). Celery: 10 s. */
  queueExpires?: number;
}

export interface BroadcastOptions {
  arguments?: Record<string, unknown>;
  /** Node names to address; null/omitted = every node. */
  destination?: readonly string[] | null;
  /** Select nodes by name instead: a glob or a regex, per `matcher`. */
  pattern?: string;
  matcher?: NodeMatcher;
  /** Wait for replies (default false for `cast`, true for `call`). */
  reply?: boolean;
  /** Stop collecting once no reply arrived for this long (ms). Default 1000, as Celery. */
  timeout?: number;
  /**
   * How long to wait for the first reply (ms), when longer than `timeout`; the request expires after it too, so a
   * busy node's late answer still counts. Later replies are awaited `timeout` each. Default: `timeout`.
   */
  firstReplyTimeout?: number;
  /** Stop after this many replies (defaults to the number of destinations when given). */
  limit?: number;
  /** Stop as soon as this returns true for the replies collected so far (asked after each reply). */
  until?: (replies: readonly MailboxReply[]) => boolean;
  /** Called with each reply as it arrives. */
  callback?: (reply: MailboxReply) => void;
  /**
   * Called when no node listened to the request (the broker refused it as unroutable); the broadcast then resolves at
   * once with no replies. Lets a caller tell "nobody there" from "nobody answered in time".
   */
  onNobodyListening?: () => void;
}

interface Collector {
  readonly replies: MailboxReply[];
  readonly onReply: () => void;
  readonly callback?: (reply: MailboxReply) => void;
}

const UNCLAIMED_LIMIT = 1000;

/**
 * Kombu's pidbox: broadcast remote control with replies. Requests go to the fanout exchange `<ns>.pidbox`, every
 * node reads its own queue, and replies come back through the direct exchange `reply.<ns>.pidbox` to this client's
 * reply queue — the names and message shapes Python's `celery inspect`/`control` and Flower use.
 */
export class Mailbox implements NodeMailbox {
  readonly connection: Connection;
  readonly namespace: string;
  readonly clock: LamportClock;
  readonly oid: string;
  readonly exchange: Exchange;
  readonly replyExchange: Exchange;
  readonly serializer: string;
  readonly accept: readonly string[];
  readonly queueTtl: number;
  readonly queueExpires: number;
  readonly #producer: Producer;
  readonly #collectors = new Map<string, Collector>();
  /** Replies whose ticket nobody waits for (yet): handed to a later call with that ticket, as Kombu does. */
  readonly #unclaimed = new BoundedMap<string, MailboxReply[]>(UNCLAIMED_LIMIT);
  #replyConsumer: Promise<Consumer> | undefined;

  constructor(connection: Connection, options: MailboxOptions = {}) {
    this.connection = connection;
    this.namespace = options.namespace ?? 'celery';
    this.clock = options.clock ?? new LamportClock();
    this.oid = options.oid ?? randomUUID();
    this.serializer = options.serializer ?? 'json';
    this.accept = options.accept ?? ['json'];
    this.queueTtl = options.queueTtl ?? 300_000;
    this.queueExpires = options.queueExpires ?? 10_000;
    // Flags exactly as Celery declares them: a mismatch is a 406 on RabbitMQ.
    this.exchange = new Exchange(`${this.namespace}.pidbox`, { type: 'fanout', durable: false, autoDelete: false });
    this.replyExchange = new Exchange(`reply.${this.namespace}.pidbox`, { type: 'direct', durable: false, autoDelete: false });
    this.#producer = new Producer(connection, { serializer: this.serializer });
  }

  /** A node of this mailbox, answering requests addressed to `hostname` (e.g. `kq1@host`). */
  node(hostname: string, handlers: Record<string, MailboxHandler> = {}): MailboxNode {
    return new MailboxNode(this, hostname, handlers);
  }

  /** The queue a node reads: `<hostname>.<ns>.pidbox`, bound to the request exchange. */
  nodeQueue(hostname: string): Queue {
    return new Queue(`${hostname}.${this.namespace}.pidbox`, {
      exchange: this.exchange,
      routingKey: '',
      durable: false,
      autoDelete: true,
      messageTtl: this.queueTtl,
      expires: this.queueExpires,
    });
  }

  /** This client's reply queue: `<oid>.reply.<ns>.pidbox`, bound to the reply exchange with key `oid`. */
  get replyQueue(): Queue {
    return new Queue(`${this.oid}.reply.${this.namespace}.pidbox`, {
      exchange: this.replyExchange,
      routingKey: this.oid,
      durable: false,
      autoDelete: true,
      messageTtl: this.queueTtl,
      expires: this.queueExpires,
    });
  }

  /** Sends a request and does not wait for replies. */
  async cast(destination: string | readonly string[], method: string, args: Record<string, unknown> = {}): Promise<void> {
    await this.broadcast(method, { arguments: args, destination: toList(destination), reply: false });
  }

  /** Sends a request to the given nodes and collects their replies. */
  call(
    destination: string | readonly string[],
    method: string,
    args: Record<string, unknown> = {},
    options: Omit<BroadcastOptions, 'arguments' | 'destination' | 'reply'> = {},
  ): Promise<MailboxReply[]> {
    return this.broadcast(method, { ...options, arguments: args, destination: toList(destination), reply: true });
  }

  /** `call` to several nodes (Kombu's `multi_call`). */
  multiCall(
    destinations: readonly string[],
    method: string,
    args: Record<string, unknown> = {},
    options: Omit<BroadcastOptions, 'arguments' | 'destination' | 'reply'> = {},
  ): Promise<MailboxReply[]> {
    return this.call(destinations, method, args, options);
  }

  /**
   * Publishes a request to every node (or those selected by `destination` / `pattern`). With `reply`, resolves to
   * the replies collected until `limit` is reached or `timeout` passes without a new one.
   */
  async broadcast(method: string, options: BroadcastOptions = {}): Promise<MailboxReply[]> {
    const destination = options.destination && options.destination.length > 0 ? [...options.destination] : null;
    const request: MailboxRequest = {
      method,
      arguments: options.arguments ?? {},
      destination,
      pattern: options.pattern ?? null,
      matcher: options.pattern ? (options.matcher ?? 'glob') : null,
    };
    const timeout = options.timeout ?? 1000;
    const firstReplyTimeout = Math.max(timeout, options.firstReplyTimeout ?? timeout);
    if (!options.reply) {
      await this.#publish(request, 0);
      return [];
    }
    const ticket = randomUUID();
    request.ticket = ticket;
    request.reply_to = { exchange: this.replyExchange.name, routing_key: this.oid };
    await this.#listen();
    const limit = options.limit ?? (destination ? destination.length : undefined);
    return new Promise<MailboxReply[]>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (): void => {
        if (timer) clearTimeout(timer);
        this.#collectors.delete(ticket);
        resolve(collector.replies);
      };
      const arm = (): void => {
        if (timer) clearTimeout(timer);
        timer = setTimeout(finish, collector.replies.length > 0 ? timeout : firstReplyTimeout);
      };
      const collector: Collector = {
        replies: [],
        callback: options.callback,
        onReply: () => {
          if ((limit !== undefined && collector.replies.length >= limit) || options.until?.(collector.replies)) finish();
          else arm();
        },
      };
      this.#collectors.set(ticket, collector);
      for (const reply of this.#unclaimed.get(ticket) ?? []) this.#accept(collector, reply);
      this.#unclaimed.delete(ticket);
      // Mandatory: when no node's queue is bound to the exchange (on Redis: when no node listens, whatever the
      // bindings of nodes killed without a word say) the broker says so at once, and there is no one to wait `timeout`
      // for (a worker starting alone skips Mingle's second; `inspect` with no workers answers now).
      this.#publish(request, firstReplyTimeout, true).then(arm, (error: unknown) => {
        this.#collectors.delete(ticket);
        if (error instanceof UnroutableError) {
          options.onNobodyListening?.();
          resolve(collector.replies);
        } else reject(error);
      });
    });
  }

  /** Stops listening for replies and deletes the reply queue. */
  async close(): Promise<void> {
    const consumer = await this.#replyConsumer?.catch(() => undefined);
    this.#replyConsumer = undefined;
    if (!consumer) return;
    await consumer.cancel();
    const replyQueue = this.replyQueue;
    this.connection.forget(replyQueue);
    await this.connection.ensure((channel) => channel.deleteQueue(replyQueue.name)).catch(() => undefined);
  }

  async #publish(request: MailboxRequest, timeout: number, mandatory = false): Promise<void> {
    await this.#producer.publish(request, {
      exchange: this.exchange,
      routingKey: '',
      mandatory,
      headers: { clock: this.clock.forward(), expires: timeout > 0 ? Date.now() / 1000 + timeout / 1000 : 0 },
      deliveryMode: 2,
      declare: [this.exchange],
    });
  }

  #listen(): Promise<Consumer> {
    this.#replyConsumer ??= (async () => {
      const consumer = new Consumer(this.connection, {
        queues: [this.replyQueue],
        noAck: true,
        accept: this.accept,
        onMessage: (body, delivery) => this.#onReply(body, delivery),
      });
      await consumer.consume();
      return consumer;
    })().catch((error: unknown) => {
      this.#replyConsumer = undefined;
      throw error;
    });
    return this.#replyConsumer;
  }

  #onReply(body: unknown, delivery: Delivery): void {
    this.clock.adjust(Number(delivery.headers['clock'] ?? 0) || 0);
    if (!body || typeof body !== 'object' || Array.isArray(body)) return;
    const reply = body as MailboxReply;
    const ticket = delivery.headers['ticket'];
    // A reply without a ticket is taken as ours when exactly one call is waiting (Kombu treats it as current).
    const collector =
      typeof ticket === 'string'
        ? this.#collectors.get(ticket)
        : this.#collectors.size === 1
          ? [...this.#collectors.values()][0]
          : undefined;
    if (collector) {
      this.#accept(collector, reply);
      return;
    }
    if (typeof ticket === 'string') {
      this.#unclaimed.set(ticket, [...(this.#unclaimed.get(ticket) ?? []), reply]);
    }
  }

  #accept(collector: Collector, reply: MailboxReply): void {
    collector.replies.push(reply);
    collector.callback?.(reply);
    collector.onReply();
  }
}

function toList(destination: string | readonly string[]): string[] {
  return typeof destination === 'string' ? [destination] : [...destination];
}
