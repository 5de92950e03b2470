import { Consumer } from '../consumer';
import { KqError } from '../errors';
import { Exchange } from '../exchange';
import type { Delivery } from '../message';
import { Producer } from '../producer';
import { pythonExceptionRepr } from '../python-repr';
import { TypedEmitter } from '../typed-emitter';
import type { Connection } from '../connection';
import type { LamportClock } from '../lamport-clock';
import type { Queue } from '../queue';
import type { MailboxRequest } from './mailbox-request';
import { matchNode } from './node-matcher';

/**
 * What a node uses of its `Mailbox` (which implements it): the connection, codecs, clock and the names of its
 * queues and reply exchange. Declared here so the node need not import the Mailbox that makes nodes.
 */
export interface NodeMailbox {
  readonly connection: Connection;
  readonly clock: LamportClock;
  readonly replyExchange: Exchange;
  readonly serializer: string;
  readonly accept: readonly string[];
  nodeQueue(hostname: string): Queue;
}

/** What a handler knows about the request it serves. */
export interface MailboxRequestContext {
  readonly hostname: string;
  readonly method: string;
  readonly ticket: string | undefined;
  /** The request's raw headers (`clock`, `expires`). */
  readonly headers: Readonly<Record<string, unknown>>;
}

/** A remote-control command: receives the request's `arguments`; its return value is the reply. */
export type MailboxHandler = (args: Record<string, unknown>, context: MailboxRequestContext) => unknown;

/** Return this from a handler to send no reply (Celery's `shutdown` does not answer). */
export const NO_REPLY: unique symbol = Symbol('kq.mailbox.noReply');

export type MailboxNodeEvents = {
  /** A request was handled (after the reply, if any, was sent). */
  handled: [method: string, reply: unknown];
  /** A request could not be read or answered; the node carries on. */
  error: [error: Error];
};

/**
 * One node of a `Mailbox` (Kombu's `pidbox.Node`): reads `<hostname>.<ns>.pidbox`, runs the handler a request
 * names if the request is for this node, and replies `{ hostname: value }` — or Celery's error shape
 * `{ error: "KeyError('name')" }`. Nothing a requester sends can make it throw.
 */
export class MailboxNode extends TypedEmitter<MailboxNodeEvents> {
  readonly mailbox: NodeMailbox;
  readonly hostname: string;
  readonly handlers = new Map<string, MailboxHandler>();
  readonly #producer: Producer;
  readonly #declaredReplyExchanges = new Set<string>();
  #consumer: Consumer | undefined;

  constructor(mailbox: NodeMailbox, hostname: string, handlers: Record<string, MailboxHandler> = {}) {
    super();
    this.mailbox = mailbox;
    this.hostname = hostname;
    for (const [name, handler] of Object.entries(handlers)) this.handlers.set(name, handler);
    this.#producer = new Producer(mailbox.connection, { serializer: mailbox.serializer });
  }

  register(method: string, handler: MailboxHandler): this {
    this.handlers.set(method, handler);
    return this;
  }

  /** Declares the node queue and starts answering requests. */
  async listen(): Promise<void> {
    if (this.#consumer) return;
    const consumer = new Consumer(this.mailbox.connection, {
      queues: [this.mailbox.nodeQueue(this.hostname)],
      noAck: true,
      accept: this.mailbox.accept,
      onMessage: (body, delivery) => this.#onMessage(body, delivery),
    });
    consumer.on('rejected', (_delivery, reason) => this.emit('error', reason));
    consumer.on('error', (error) => this.emit('error', error));
    await consumer.consume();
    this.#consumer = consumer;
  }

  async close(): Promise<void> {
    const consumer = this.#consumer;
    this.#consumer = undefined;
    await consumer?.cancel();
  }

  /**
   * Handles one decoded request: returns the reply value sent (or `undefined` when the request was not for
   * this node, expired, malformed, or asked for no reply). Exposed for tests and for in-process dispatch.
   */
  async handle(body: unknown, headers: Record<string, unknown> = {}): Promise<unknown> {
    this.mailbox.clock.adjust(Number(headers['clock'] ?? 0) || 0);
    const request = parseRequest(body);
    if (!request) {
      this.emit('error', new KqError(`Ignored a malformed remote-control request: ${preview(body)}`));
      return undefined;
    }
    if (!this.#addressedToMe(request)) return undefined;
    const expires = Number(headers['expires'] ?? 0);
    if (expires > 0 && Date.now() / 1000 > expires) return undefined;

    const handler = this.handlers.get(request.method);
    let reply: unknown;
    if (!handler) {
      reply = { error: pythonExceptionRepr('KeyError', request.method) };
    } else {
      try {
        reply = await handler(request.arguments, {
          hostname: this.hostname,
          method: request.method,
          ticket: request.ticket,
          headers,
        });
      } catch (error) {
        reply = { error: errorRepr(error) };
      }
    }
    if (reply === NO_REPLY) {
      this.emit('handled', request.method, undefined);
      return undefined;
    }
    if (request.reply_to && request.ticket) await this.#reply(request, reply ?? null);
    this.emit('handled', request.method, reply);
    return reply;
  }

  async #onMessage(body: unknown, delivery: Delivery): Promise<void> {
    try {
      await this.handle(body, delivery.headers);
    } catch (error) {
      this.emit('error', error instanceof Error ? error : new KqError(String(error)));
    }
  }

  #addressedToMe(request: MailboxRequest): boolean {
    if (request.destination && request.destination.length > 0) return request.destination.includes(this.hostname);
    if (request.pattern && request.matcher) return matchNode(this.hostname, request.pattern, request.matcher);
    return true;
  }

  async #reply(request: MailboxRequest, value: unknown): Promise<void> {
    const { exchange, routing_key: routingKey } = request.reply_to as NonNullable<MailboxRequest['reply_to']>;
    const replyExchange =
      exchange === this.mailbox.replyExchange.name
        ? this.mailbox.replyExchange
        : new Exchange(exchange, { type: 'direct', durable: false, autoDelete: false });
    const declare = this.#declaredReplyExchanges.has(exchange) ? [] : [replyExchange];
    await this.#producer.publish(
      { [this.hostname]: value },
      {
        exchange: replyExchange,
        routingKey,
        headers: { ticket: request.ticket, clock: this.mailbox.clock.forward() },
        deliveryMode: 1,
        declare,
      },
    );
    this.#declaredReplyExchanges.add(exchange);
  }
}

function parseRequest(body: unknown): MailboxRequest | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const raw = body as Record<string, unknown>;
  if (typeof raw['method'] !== 'string' || raw['method'] === '') return undefined;
  const args = raw['arguments'];
  const destination = raw['destination'];
  const replyTo = raw['reply_to'];
  const request: MailboxRequest = {
    method: raw['method'],
    arguments: args && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : {},
    destination: Array.isArray(destination) ? destination.filter((d): d is string => typeof d === 'string') : typeof destination === 'string' ? [destination] : null,
    pattern: typeof raw['pattern'] === 'string' ? raw['pattern'] : null,
    matcher: typeof raw['matcher'] === 'string' ? raw['matcher'] : null,
  };
  if (typeof raw['ticket'] === 'string') request.ticket = raw['ticket'];
  if (replyTo && typeof replyTo === 'object') {
    const { exchange, routing_key: routingKey } = replyTo as Record<string, unknown>;
    if (typeof exchange === 'string' && typeof routingKey === 'string') request.reply_to = { exchange, routing_key: routingKey };
  }
  return request;
}

function errorRepr(error: unknown): string {
  if (error instanceof Error) return pythonExceptionRepr(error.name === 'Error' ? 'Exception' : error.name, error.message);
  return pythonExceptionRepr('Exception', String(error));
}

function preview(body: unknown): string {
  const text = typeof body === 'string' ? body : JSON.stringify(body) ?? String(body);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
