import { randomUUID } from 'node:crypto';
import type { FanoutBus, FanoutPublishOptions, StoredMessage } from '@kq/core';
import type { RedisClient } from './connection-factory';
import type { ReplylessPublisher } from './replyless-publisher';
import { MalformedEnvelope, decodeEnvelope, encodeEnvelope } from '@kq/core';
import { isCluster, masterClientOf } from './cluster-routing';
import type { KeyLayout } from './key-layout';

type Listener = (message: StoredMessage) => void;

interface Subscription {
  readonly exchange: string;
  readonly listeners: Set<Listener>;
  /** Resolves once PSUBSCRIBE is acknowledged; rejects if it failed. */
  ready: Promise<void>;
}

/**
 * Fanout over Redis PUB/SUB exactly as Kombu does it (docs/wire.md#fanout-over-pubsub):
 * `PUBLISH {prefix}/{db}.{exchange}[/{routing key}]` and `PSUBSCRIBE` on the same construction from the binding key
 * with `#` → `*` (an empty binding key hears every routing key, see `KeyLayout.subscribePatterns`). Lossy by nature: only
 * subscribers connected at publish time receive the message. One PSUBSCRIBE per pattern is shared by every local
 * subscriber of it; ioredis re-subscribes after a reconnect.
 *
 * A transient message nobody needs a count for (Celery's events: heartbeats, task events) goes out on the
 * `ReplylessPublisher` when there is one (not on a cluster, whose exchanges keep to one master each for their order),
 * so in order, but while that connection is (re)connecting, when it goes the answered way; the rest (the pidbox's
 * persistent commands) on the command connection, as before.
 */
export class RedisFanoutBus implements FanoutBus {
  readonly #layout: KeyLayout;
  readonly #commands: RedisClient;
  readonly #subscriber: RedisClient;
  readonly #warn: (message: string) => void;
  readonly #replyless: ReplylessPublisher | undefined;
  readonly #subscriptions = new Map<string, Subscription>();

  constructor(
    layout: KeyLayout,
    commands: RedisClient,
    subscriber: RedisClient,
    warn: (message: string) => void,
    replyless?: ReplylessPublisher,
  ) {
    this.#layout = layout;
    this.#commands = commands;
    this.#subscriber = subscriber;
    this.#warn = warn;
    this.#replyless = replyless;
    subscriber.on('pmessage', (pattern: string, channel: string, data: string) => this.#receive(pattern, channel, data));
  }

  /**
   * Resolves to how many subscribers got the message; undefined on a cluster, where PUBLISH counts one node's, and for
   * a message sent unanswered (see the class).
   */
  async publish(exchange: string, routingKey: string, message: StoredMessage, options?: FanoutPublishOptions): Promise<number | undefined> {
    const channel = this.#layout.publishChannel(exchange, routingKey);
    const payload = encodeEnvelope(message);
    const unanswered = options?.mandatory !== true && message.properties.deliveryMode === 1;
    if (unanswered && this.#replyless?.publish(channel, payload)) return undefined;
    const reached = await this.#publisher(exchange).publish(channel, payload);
    return isCluster(this.#commands) ? undefined : reached;
  }

  /**
   * Where an exchange's messages are published. A cluster forwards a PUBLISH to every node, but ioredis sends a
   * command without a key to any node, and two nodes' forwards can overtake each other: an exchange's messages go
   * through one master (the one serving its channel name's slot), so its subscribers get them in publish order.
   */
  #publisher(exchange: string): RedisClient {
    if (!isCluster(this.#commands)) return this.#commands;
    return masterClientOf(this.#commands, this.#layout.publishChannel(exchange, '')) ?? this.#commands;
  }

  async subscribe(exchange: string, bindingKey: string, onMessage: Listener): Promise<() => Promise<void>> {
    // A distinct function per subscribe call, so the same callback subscribed twice is counted twice.
    const listener: Listener = (message) => onMessage(message);
    const patterns = this.#layout.subscribePatterns(exchange, bindingKey);
    const joined: string[] = [];
    try {
      for (const pattern of patterns) {
        await this.#join(pattern, exchange, listener);
        joined.push(pattern);
      }
    } catch (error) {
      await Promise.all(joined.map((pattern) => this.#leave(pattern, listener)));
      throw error;
    }
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      await Promise.all(joined.map((pattern) => this.#leave(pattern, listener)));
    };
  }

  async #join(pattern: string, exchange: string, listener: Listener): Promise<void> {
    let subscription = this.#subscriptions.get(pattern);
    if (!subscription) {
      const created: Subscription = { exchange, listeners: new Set(), ready: Promise.resolve() };
      created.ready = this.#subscriber.psubscribe(pattern).then(
        () => undefined,
        (error: unknown) => {
          if (this.#subscriptions.get(pattern) === created) this.#subscriptions.delete(pattern);
          throw error;
        },
      );
      this.#subscriptions.set(pattern, created);
      subscription = created;
    }
    subscription.listeners.add(listener);
    try {
      await subscription.ready;
    } catch (error) {
      subscription.listeners.delete(listener);
      throw error;
    }
  }

  async #leave(pattern: string, listener: Listener): Promise<void> {
    const subscription = this.#subscriptions.get(pattern);
    if (!subscription) return;
    subscription.listeners.delete(listener);
    if (subscription.listeners.size === 0) {
      this.#subscriptions.delete(pattern);
      await this.#subscriber.punsubscribe(pattern).catch(() => undefined);
    }
  }

  /** Closes the unanswered publisher's connection; the command and subscriber connections are the store's. */
  close(): void {
    this.#replyless?.close();
  }

  /** Patterns currently subscribed (for stats). */
  get patterns(): number {
    return this.#subscriptions.size;
  }

  #receive(pattern: string, channel: string, data: string): void {
    const subscription = this.#subscriptions.get(pattern);
    if (!subscription || subscription.listeners.size === 0) return;
    let message: StoredMessage;
    try {
      message = decodeEnvelope(data, { queue: '', makeTag: randomUUID });
    } catch (error) {
      // Nothing is stored for a fanout message, so there is nothing to quarantine: report and move on.
      const reason = error instanceof MalformedEnvelope ? error.reason : String(error);
      this.#warn(`kq/redis: dropped an unreadable fanout message on channel ${JSON.stringify(channel)}: ${reason}`);
      return;
    }
    if (message.exchange === '') message.exchange = subscription.exchange;
    let first = true;
    for (const listener of subscription.listeners) {
      // Each local queue gets its own headers and properties objects, as with a stored copy.
      listener(first ? message : { ...message, headers: { ...message.headers }, properties: { ...message.properties } });
      first = false;
    }
  }
}
