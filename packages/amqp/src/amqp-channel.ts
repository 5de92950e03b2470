import {
  ChannelClosed,
  ConnectionLost,
  KqError,
  StaleDeliveryError,
  TypedEmitter,
  UnsupportedFeature,
  type Channel,
  type ChannelEvents,
  type ConsumeOptions,
  type ConsumerHandle,
  type DelayedCount,
  type Delivery,
  type Exchange,
  type GetOptions,
  type OutgoingMessage,
  type PublishOptions,
  type Queue,
  type QueueStats,
} from '@kq/core';
import type { AmqplibChannel, AmqplibGetMessage } from './amqplib-loader';
import { AmqpConsumer } from './amqp-consumer';
import { AmqpDelivery, type DeliverySettler, type SettleAction } from './amqp-delivery';
import type { OperationContext } from './amqp-errors';
import { ChannelSlot } from './channel-slot';
import { bindQueueOn, declareExchangeOn, declareQueueOn } from './declarations';
import { countLadder } from './delayed-count';
import { toDeliveryInit, toPublishOptions } from './message-mapping';
import { Publisher } from './publisher';
import { runOnSlot } from './slot-operation';
import type { ConsumerOwner, TransportContext } from './transport-context';

/** A message fetched with `basic.get`, and the getter channel (incarnation) it must be settled on. */
interface Fetched {
  readonly channel: AmqplibChannel;
  readonly incarnation: number;
  readonly message: AmqplibGetMessage;
  readonly queue: string;
}

/**
 * A kq channel on AMQP. It is a bundle of amqplib channels, each replaced on its own when the broker closes it:
 *
 * - an *admin* channel for declarations, bindings, deletes and purges — a 406 or 404 closes only it, and the next
 *   operation opens a new one (operations that failed because the connection dropped are retried once it is back);
 * - a *publisher* channel (confirm mode by default), see `Publisher`;
 * - a *getter* channel for `basic.get`, so its unsettled deliveries do not die with a failed declaration;
 * - one channel per consumer, see `AmqpConsumer`.
 *
 * The kq channel itself stays open until `close()`: connection loss is recovered underneath it.
 */
export class AmqpChannel extends TypedEmitter<ChannelEvents> implements Channel, ConsumerOwner {
  readonly #ctx: TransportContext;
  readonly #admin: ChannelSlot;
  readonly #getter: ChannelSlot;
  readonly #publisher: Publisher;
  readonly #consumers = new Set<AmqpConsumer>();
  readonly #gotSettler: DeliverySettler<Fetched> = {
    settle: (fetched, action) => this.#settleGot(fetched, action),
    holds: (fetched) => this.#open && this.#getter.owns(fetched.channel, fetched.incarnation),
  };
  #open = true;

  constructor(ctx: TransportContext) {
    super();
    this.#ctx = ctx;
    this.#admin = new ChannelSlot(ctx.supervisor, 'plain');
    this.#getter = new ChannelSlot(ctx.supervisor, 'plain');
    this.#publisher = new Publisher(ctx.supervisor, {
      confirms: ctx.options.publisherConfirms,
      recoveryTimeout: ctx.options.recoveryTimeout,
      closeTimeout: ctx.options.closeTimeout,
      onError: (error) => this.reportError(error),
      routedQueues: (exchange, routingKey, headers) => ctx.topology.queuesRoutedTo(exchange, routingKey, headers),
    });
  }

  get isOpen(): boolean {
    return this.#open && !this.#ctx.supervisor.isClosed;
  }

  async declareExchange(exchange: Exchange): Promise<void> {
    if (exchange.name === '') return;
    await this.#adminOp({ operation: `declare exchange ${JSON.stringify(exchange.name)}`, exchange: exchange.name }, (channel) =>
      declareExchangeOn(channel, exchange),
    );
    this.#ctx.topology.addExchange(exchange);
  }

  async deleteExchange(name: string): Promise<void> {
    await this.#adminOp({ operation: `delete exchange ${JSON.stringify(name)}`, exchange: name }, (channel) => channel.deleteExchange(name));
    this.#ctx.topology.removeExchange(name);
  }

  async declareQueue(queue: Queue): Promise<QueueStats> {
    const stats = await this.#adminOp({ operation: `declare queue ${JSON.stringify(queue.name)}`, queue: queue.name }, (channel) =>
      declareQueueOn(channel, queue),
    );
    this.#ctx.topology.addQueue(queue);
    // One declaration per exchange, however many of the queue's bindings use it (Gossip binds four keys of one).
    const declaredExchanges = new Set<string>();
    for (const binding of queue.bindings) {
      if (binding.exchange.name === '') continue; // every queue is bound to the default exchange already
      if (!declaredExchanges.has(binding.exchange.name)) await this.declareExchange(binding.exchange);
      declaredExchanges.add(binding.exchange.name);
      await this.bindQueue(stats.queue, binding.exchange.name, binding.routingKey, { ...binding.arguments });
    }
    return stats;
  }

  async checkQueue(name: string): Promise<QueueStats> {
    const reply = await this.#adminOp({ operation: `check queue ${JSON.stringify(name)}`, queue: name }, (channel) => channel.checkQueue(name));
    return { queue: reply.queue, messageCount: reply.messageCount, consumerCount: reply.consumerCount };
  }

  /** ETA/countdown messages waiting in the delay ladder, all targets together (see `countLadder`). */
  countDelayed(): Promise<DelayedCount> {
    return countLadder(this.#ctx.ladder, async (queue) => (await this.checkQueue(queue)).messageCount);
  }

  async bindQueue(queue: string, exchange: string, routingKey: string, args: Record<string, unknown> = {}): Promise<void> {
    const binding = { queue, exchange, routingKey, arguments: { ...args } };
    await this.#adminOp({ operation: `bind queue ${JSON.stringify(queue)} to exchange ${JSON.stringify(exchange)}`, queue, exchange }, (channel) =>
      bindQueueOn(channel, binding),
    );
    this.#ctx.topology.addQueueBinding(binding);
  }

  async unbindQueue(queue: string, exchange: string, routingKey: string, args: Record<string, unknown> = {}): Promise<void> {
    const binding = { queue, exchange, routingKey, arguments: { ...args } };
    await this.#adminOp(
      { operation: `unbind queue ${JSON.stringify(queue)} from exchange ${JSON.stringify(exchange)}`, queue, exchange },
      (channel) => channel.unbindQueue(queue, exchange, routingKey, binding.arguments),
    );
    this.#ctx.topology.removeQueueBinding(binding);
  }

  async deleteQueue(name: string): Promise<number> {
    const reply = await this.#adminOp({ operation: `delete queue ${JSON.stringify(name)}`, queue: name }, (channel) => channel.deleteQueue(name));
    this.#ctx.topology.removeQueue(name);
    return reply.messageCount;
  }

  async purgeQueue(name: string): Promise<number> {
    const reply = await this.#adminOp({ operation: `purge queue ${JSON.stringify(name)}`, queue: name }, (channel) => channel.purgeQueue(name));
    return reply.messageCount;
  }

  publish(exchange: string, routingKey: string, message: OutgoingMessage, options: PublishOptions = {}): Promise<void> {
    if (!this.#open) return Promise.reject(closedError());
    const mandatory = options.mandatory ?? false;
    const delay = options.delay ?? 0;
    if (delay > 0) return this.#publishDelayed(exchange, routingKey, message, mandatory, delay);
    let publishOptions;
    try {
      publishOptions = toPublishOptions(message, mandatory);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#publisher.publish({
      exchange,
      routingKey,
      content: message.body,
      options: publishOptions,
      mandatory,
      target: { exchange, routingKey },
    });
  }

  async get(queue: string, options: GetOptions = {}): Promise<Delivery | null> {
    const noAck = options.noAck ?? false;
    const fetched = await this.#getterOp({ operation: `get a message from queue ${JSON.stringify(queue)}`, queue }, async (channel) => ({
      channel,
      incarnation: this.#getter.incarnation,
      message: await channel.get(queue, { noAck }),
    }));
    const { channel, incarnation, message } = fetched;
    if (message === false) return null;
    const init = toDeliveryInit(message, queue, undefined, noAck, this.#ctx.ladder);
    return new AmqpDelivery(init, this.#gotSettler, { channel, incarnation, message, queue });
  }

  async consume(options: ConsumeOptions): Promise<ConsumerHandle> {
    this.#assertOpen();
    const consumer = new AmqpConsumer(this.#ctx, this, options);
    this.#consumers.add(consumer);
    try {
      await consumer.start();
    } catch (error) {
      this.#consumers.delete(consumer);
      throw error;
    }
    return consumer;
  }

  /**
   * Closes the channel: publishes already made are given `closeTimeout` to be confirmed, consumers stop, and every
   * delivery not yet settled goes back to its queue (the broker requeues it, marked redelivered).
   */
  async close(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    await Promise.all([...this.#consumers].map((consumer) => consumer.close()));
    await this.#publisher.close();
    await Promise.all([this.#admin.close(), this.#getter.close()]);
    this.#ctx.channelClosed(this);
    this.emit('close');
  }

  /** The transport was terminated: stop everything now, failing unconfirmed publishes with `ConnectionLost`. */
  terminate(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#publisher.abort(new ConnectionLost('The transport was terminated before the broker confirmed the message; it may or may not have been delivered.'));
    for (const consumer of this.#consumers) void consumer.close();
    void this.#admin.close();
    void this.#getter.close();
    this.#ctx.channelClosed(this);
    this.emit('close');
  }

  // ——— ConsumerOwner ———

  reportError(error: unknown): void {
    this.emit('error', error instanceof Error ? error : new KqError(String(error)));
  }

  forgetConsumer(consumer: object): void {
    this.#consumers.delete(consumer as AmqpConsumer);
  }

  // ——— internals ———

  async #publishDelayed(exchange: string, routingKey: string, message: OutgoingMessage, mandatory: boolean, delay: number): Promise<void> {
    const plan = this.#ctx.ladder.plan(delay, exchange, routingKey);
    if (plan === null) return this.publish(exchange, routingKey, message, { mandatory });
    try {
      await this.#ctx.ensureDelayRoute(exchange, routingKey);
    } catch (error) {
      if (error instanceof KqError) throw error;
      throw new UnsupportedFeature(`Cannot set up delayed delivery: ${String(error)}`);
    }
    // A per-message TTL would expire the message out of the first ladder queue early; RabbitMQ drops the
    // property when it dead-letters anyway, so it is left off (the delivered message has no expiration).
    const publishOptions = toPublishOptions(message, mandatory, plan.headers, true);
    return this.#publisher.publish({
      exchange: plan.exchange,
      routingKey: plan.routingKey,
      content: message.body,
      options: publishOptions,
      mandatory,
      target: { exchange, routingKey },
    });
  }

  #settleGot({ channel, incarnation, message, queue }: Fetched, action: SettleAction): Promise<void> {
    const tag = message.fields.deliveryTag;
    if (!this.#open) {
      return Promise.reject(
        new ChannelClosed(`Cannot ${action} message ${tag} from queue ${JSON.stringify(queue)}: its channel was closed, so the broker requeued it.`),
      );
    }
    const stale = (): StaleDeliveryError =>
      new StaleDeliveryError(
        `Cannot ${action} message ${tag} from queue ${JSON.stringify(queue)}: the channel it was fetched on was lost and ` +
          `the broker has already requeued it; it will be delivered again. Do not retry the ${action}.`,
      );
    if (!this.#getter.owns(channel, incarnation)) return Promise.reject(stale());
    try {
      if (action === 'ack') channel.ack(message);
      else channel.reject(message, action === 'requeue');
    } catch {
      return Promise.reject(stale());
    }
    return Promise.resolve();
  }

  #getterOp<T>(context: OperationContext, run: (channel: AmqplibChannel) => Promise<T>): Promise<T> {
    this.#assertOpen();
    return runOnSlot(this.#getter, context, this.#ctx.options.recoveryTimeout, run, () => this.#open);
  }

  /** Runs an RPC on the admin channel, retrying on a fresh channel if the connection dropped under it. */
  #adminOp<T>(context: OperationContext, run: (channel: AmqplibChannel) => Promise<T>): Promise<T> {
    this.#assertOpen();
    return runOnSlot(this.#admin, context, this.#ctx.options.recoveryTimeout, run, () => this.#open);
  }

  #assertOpen(): void {
    if (!this.#open) throw closedError();
  }
}

function closedError(): ChannelClosed {
  return new ChannelClosed('The channel is closed; open a new one with transport.createChannel().');
}
