import {
  ChannelClosed,
  ExchangeNotFound,
  PreconditionFailed,
  QueueNotFound,
  UnroutableError,
  UnsupportedFeature,
} from '../errors';
import type { Exchange } from '../exchange';
import type { Delivery, DeliveryInfo, Headers, OutgoingMessage } from '../message';
import type { Queue } from '../queue';
import { routeMessage, type BindingRecord } from '../routing';
import type {
  Channel,
  ChannelEvents,
  ConsumeOptions,
  ConsumerHandle,
  GetOptions,
  PublishOptions,
  QueueStats,
} from '../transport';
import { TypedEmitter } from '../typed-emitter';
import { VirtualConsumer, type ConsumerChannel } from './virtual-consumer';
import { VirtualDelivery, type ClaimSettler, type SettleAction } from './virtual-delivery';
import { storedMessage } from './kombu-envelope';
import type { Claim, ClaimOptions, StoredMessage } from './virtual-store';
import type { VirtualChannelHost } from './virtual-channel-host';

/** Live fanout deliveries: nothing is stored, so settling has nothing to do and nothing can be taken back. */
const LIVE_SETTLER: ClaimSettler<unknown> = { settle: () => Promise.resolve(), holds: () => true };

/**
 * What Kombu's virtual transport gives a simple store: exchanges and routing for every exchange type, QoS with
 * prefetch, ack emulation (unsettled deliveries restored when the channel closes), priority buckets, dead-lettering
 * of rejected messages, and fair consumption of many queues. The store only keeps lists and claims.
 */
export class VirtualChannel extends TypedEmitter<ChannelEvents> implements Channel, ConsumerChannel {
  readonly checkQueueSteps: ((name: string) => Promise<ReadonlyArray<{ step: number; messageCount: number }>>) | undefined;
  readonly transport: VirtualChannelHost;
  readonly #consumers = new Set<VirtualConsumer>();
  /** Deliveries handed out and not yet settled, in delivery order: restored on close (ack emulation). */
  readonly #unsettled = new Map<Claim, VirtualConsumer | undefined>();
  /** Auto-delete queues bound to a live fanout that this channel consumed: deleted when it closes. */
  readonly #liveFanoutAutoDelete = new Set<string>();
  #open = true;
  /** Settles this channel's deliveries (one object for all of them, rather than a closure each). */
  readonly #settler: ClaimSettler<VirtualConsumer> = {
    settle: (claim, action, consumer, reason) => this.#settle(claim as Claim, action, consumer, reason),
    holds: (claim) => claim !== undefined && this.#unsettled.has(claim) && (this.transport.store.holds?.(claim) ?? true),
  };

  constructor(transport: VirtualChannelHost) {
    super();
    this.transport = transport;
    // Only where the store can tell its priority steps apart: a count under one step would mislead.
    const sizes = transport.store.queueSizesByStep?.bind(transport.store);
    this.checkQueueSteps = sizes
      ? (name: string) => {
          this.#assertOpen();
          return sizes(name);
        }
      : undefined;
  }

  get isOpen(): boolean {
    return this.#open && this.transport.isConnected;
  }

  async declareExchange(exchange: Exchange): Promise<void> {
    this.#assertOpen();
    if (exchange.name === '') return;
    const known = await this.transport.findExchange(exchange.name);
    if (known && !known.sameDeclaration(exchange)) {
      throw new PreconditionFailed(
        `Exchange ${JSON.stringify(exchange.name)} is already declared as ${known.type}` +
          ` (durable=${known.durable}, autoDelete=${known.autoDelete}); it cannot be re-declared as ${exchange.type}` +
          ` (durable=${exchange.durable}, autoDelete=${exchange.autoDelete}). Delete it first or use the same options.`,
      );
    }
    await this.transport.rememberExchange(exchange);
  }

  async deleteExchange(name: string): Promise<void> {
    this.#assertOpen();
    await this.transport.forgetExchange(name);
  }

  async declareQueue(queue: Queue): Promise<QueueStats> {
    this.#assertOpen();
    const known = this.transport.declaredQueue(queue.name);
    if (known && !known.sameDeclaration(queue)) {
      throw new PreconditionFailed(
        `Queue ${JSON.stringify(queue.name)} is already declared with other options ` +
          `(durable=${known.durable}, arguments=${JSON.stringify(known.toArguments())}). Use the same options or delete it first.`,
      );
    }
    await this.transport.store.declareQueue(queue);
    this.transport.rememberQueue(queue);
    for (const binding of queue.bindings) {
      if (binding.exchange.name === '') continue;
      await this.declareExchange(binding.exchange);
      await this.bindQueue(queue.name, binding.exchange.name, binding.routingKey, { ...binding.arguments });
    }
    return this.#stats(queue.name);
  }

  async checkQueue(name: string): Promise<QueueStats> {
    this.#assertOpen();
    if (!(await this.transport.store.queueExists(name)) && !this.transport.declaredQueue(name)) {
      throw new QueueNotFound(name);
    }
    return this.#stats(name);
  }


  async bindQueue(queue: string, exchange: string, routingKey: string, args: Record<string, unknown> = {}): Promise<void> {
    this.#assertOpen();
    const declared = await this.#exchange(exchange);
    const record: BindingRecord = { queue, routingKey, arguments: args };
    await this.transport.store.addBinding(exchange, record);
    if (declared.type === 'fanout') this.transport.noteFanoutBinding(queue, exchange, routingKey);
  }

  async unbindQueue(queue: string, exchange: string, routingKey: string, args: Record<string, unknown> = {}): Promise<void> {
    this.#assertOpen();
    await this.transport.store.removeBinding(exchange, { queue, routingKey, arguments: args });
    this.transport.dropFanoutBinding(queue, exchange, routingKey);
  }

  async deleteQueue(name: string): Promise<number> {
    this.#assertOpen();
    const count = await this.transport.store.deleteQueue(name);
    this.transport.forgetQueue(name);
    return count;
  }

  async purgeQueue(name: string): Promise<number> {
    this.#assertOpen();
    return this.transport.store.purgeQueue(name);
  }

  async publishBatch(exchange: string, routingKey: string, messages: readonly OutgoingMessage[], options: PublishOptions = {}): Promise<void> {
    this.#assertOpen();
    const first = messages[0];
    if (first === undefined) return;
    const declared = exchange === '' ? undefined : await this.#exchange(exchange);
    const oneByOne =
      (options.delay ?? 0) > 0 ||
      declared?.type === 'headers' || // routed by each message's own headers
      (declared?.type === 'fanout' && this.transport.store.features.fanout === 'live'); // sent to subscribers, not stored
    if (oneByOne) {
      await Promise.all(messages.map((message) => this.publish(exchange, routingKey, message, options)));
      return;
    }
    // Routed once for the batch: everything else routes by exchange and routing key alone.
    const queues = await this.#storingQueues(exchange, declared, routingKey, first.headers, options.mandatory);
    if (queues.length === 0) {
      for (let i = 0; i < messages.length; i++) this.transport.reportUnroutable(exchange, routingKey);
      return;
    }
    const store = this.transport.store;
    const pushes: Array<Promise<unknown>> = [];
    for (const queue of queues) {
      // Each queue gets its own copies (a store may mutate a message when it restores it), by priority step in order.
      const bySteps = new Map<number, StoredMessage[]>();
      for (const message of messages) {
        const step = this.transport.priorityStep(message.properties.priority);
        let stored = bySteps.get(step);
        if (!stored) bySteps.set(step, (stored = []));
        stored.push(storedMessage(exchange, routingKey, message));
      }
      for (const [step, stored] of bySteps) {
        pushes.push(store.pushMany ? store.pushMany(queue, stored, step) : Promise.all(stored.map((message) => store.push(queue, message, step))));
      }
    }
    await Promise.all(pushes);
  }

  publish(exchange: string, routingKey: string, message: OutgoingMessage, options: PublishOptions = {}): Promise<void> {
    if (exchange === '' && options.mandatory !== true && !((options.delay ?? 0) > 0)) {
      // The default exchange names its one queue (Kombu pushes even if nobody declared it): nothing to route or
      // await, so the push is made now. Every task sent to its default route comes here.
      try {
        this.#assertOpen();
        return this.transport.store.push(routingKey, storedMessage(exchange, routingKey, message), this.transport.priorityStep(message.properties.priority));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#publishRouted(exchange, routingKey, message, options);
  }

  async #publishRouted(exchange: string, routingKey: string, message: OutgoingMessage, options: PublishOptions): Promise<void> {
    this.#assertOpen();
    const delay = options.delay ?? 0;
    if (delay > 0 && !this.transport.capabilities.delayedDelivery) {
      throw new UnsupportedFeature(
        `The ${this.transport.name} transport has no delayed delivery; publish without \`delay\` and hold the message in the worker (ETA) instead.`,
      );
    }
    const declared = exchange === '' ? undefined : await this.#exchange(exchange);
    if (declared?.type === 'fanout' && this.transport.store.features.fanout === 'live') {
      // Live fanout has no queue to push to, but its subscribers bind queues (as in Kombu): none bound, unroutable.
      if (options.mandatory && (await this.transport.store.listBindings(exchange)).length === 0) {
        throw new UnroutableError(exchange, routingKey);
      }
      const mandatory = options.mandatory ?? false;
      const reached = await this.transport.fanoutBus().publish(exchange, routingKey, storedMessage(exchange, routingKey, message), { mandatory });
      // A binding outlives a subscriber killed before it could unbind (a worker's pidbox queue): Mingle and `inspect`
      // would wait out their timeout for the dead. Nobody reached is nobody to wait for.
      if (mandatory && reached === 0) throw new UnroutableError(exchange, routingKey);
      return;
    }
    const queues = await this.#storingQueues(exchange, declared, routingKey, message.headers, options.mandatory);
    if (queues.length === 0) {
      this.transport.reportUnroutable(exchange, routingKey);
      return;
    }
    const priority = this.transport.priorityStep(message.properties.priority);
    const dueAt = Date.now() + delay;
    await Promise.all(
      queues.map((queue) => {
        // Each queue gets its own copy: a store may mutate a message when it restores it.
        const stored = storedMessage(exchange, routingKey, message);
        const store = this.transport.store;
        return delay > 0 && store.pushDelayed
          ? store.pushDelayed(queue, stored, priority, dueAt)
          : store.push(queue, stored, priority);
      }),
    );
  }

  /**
   * The queues a message to `exchange` (`declared`, or undefined for the default exchange; never a live fanout) is
   * stored in. A mandatory message with none is `UnroutableError`.
   */
  async #storingQueues(
    exchange: string,
    declared: Exchange | undefined,
    routingKey: string,
    headers: Headers,
    mandatory: boolean | undefined,
  ): Promise<string[]> {
    let queues: string[];
    if (declared === undefined) {
      // Default exchange: the routing key names the queue (Kombu pushes even if nobody declared it).
      if (mandatory && !(await this.transport.store.queueExists(routingKey))) throw new UnroutableError(exchange, routingKey);
      queues = [routingKey];
    } else {
      queues = routeMessage(declared.type, await this.transport.store.listBindings(exchange), routingKey, headers);
    }
    if (queues.length === 0 && mandatory) throw new UnroutableError(exchange, routingKey);
    return queues;
  }

  async get(queue: string, options: GetOptions = {}): Promise<Delivery | null> {
    this.#assertOpen();
    const noAck = options.noAck ?? false;
    const [claim] = await this.transport.store.claim([queue], { max: 1, blockMs: 0, noAck });
    if (!claim) return null;
    if (!noAck) this.#unsettled.set(claim, undefined);
    return this.#delivery(claim, noAck, undefined, undefined);
  }

  async consume(options: ConsumeOptions): Promise<ConsumerHandle> {
    this.#assertOpen();
    const consumer = new VirtualConsumer(this, options);
    this.#consumers.add(consumer);
    this.transport.countConsumers(consumer.queues, +1);
    for (const queue of consumer.queues) {
      if (this.transport.isLiveFanoutQueue(queue) && this.transport.declaredQueue(queue)?.autoDelete) this.#liveFanoutAutoDelete.add(queue);
    }
    await consumer.start();
    return consumer;
  }

  async close(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    await Promise.all([...this.#consumers].map((consumer) => consumer.cancel()));
    // Ack emulation: what was handed out and never settled goes back to the head of its queue, last-delivered
    // first so the original order is kept.
    const pending = [...this.#unsettled.keys()].reverse();
    this.#unsettled.clear();
    for (const claim of pending) {
      try {
        await this.transport.store.restore(claim, 'head');
      } catch (error) {
        this.reportError(error);
      }
    }
    // As Kombu's Redis channel does on close: an auto-delete queue bound to a live fanout (a worker's pidbox queue)
    // is deleted, binding and all, once nothing in this process consumes it. Left bound, it would make every later
    // broadcast with replies wait for a node that is gone (a restarted worker's Mingle, `inspect`).
    for (const name of this.#liveFanoutAutoDelete) {
      if (this.transport.consumerCount(name) > 0) continue;
      try {
        await this.transport.store.deleteQueue(name);
        this.transport.forgetQueue(name);
      } catch (error) {
        this.reportError(error);
      }
    }
    this.#liveFanoutAutoDelete.clear();
    this.transport.channelClosed(this);
    this.emit('close');
  }

  // ——— used by VirtualConsumer ———

  claimFor(queues: readonly string[], options: ClaimOptions): Promise<Claim[]> {
    if (!this.#open) throw new ChannelClosed('The channel is closed.');
    return this.transport.store.claim(queues, options);
  }

  deliver(consumer: VirtualConsumer, claim: Claim, onMessage: (delivery: Delivery) => void): void {
    if (!consumer.noAck) this.#unsettled.set(claim, consumer);
    const delivery = this.#delivery(claim, consumer.noAck, consumer, consumer.tag);
    this.#invoke(onMessage, delivery);
  }

  /** A fanout message from the live bus: nothing is stored, so settling it has nothing to do. */
  deliverLive(consumer: VirtualConsumer, queue: string, message: StoredMessage, onMessage: (delivery: Delivery) => void): void {
    const delivery = new VirtualDelivery(
      {
        ...message,
        deliveryInfo: {
          exchange: message.exchange,
          routingKey: message.routingKey,
          queue,
          redelivered: message.redelivered,
          deliveryTag: message.deliveryTag,
          consumerTag: consumer.tag,
        },
        noAck: consumer.noAck,
      },
      LIVE_SETTLER,
      undefined,
      undefined,
    );
    this.#invoke(onMessage, delivery);
  }

  subscribeFanout(
    exchange: string,
    bindingKey: string,
    onMessage: (message: StoredMessage) => void,
  ): Promise<() => Promise<void>> {
    return this.transport.fanoutBus().subscribe(exchange, bindingKey, onMessage);
  }

  async returnUndelivered(claims: readonly Claim[]): Promise<void> {
    for (const claim of [...claims].reverse()) {
      try {
        await this.transport.store.restore(claim, 'head', { redelivered: false });
      } catch (error) {
        this.reportError(error);
      }
    }
  }

  forgetConsumer(consumer: VirtualConsumer): void {
    if (this.#consumers.delete(consumer)) this.transport.countConsumers(consumer.queues, -1);
  }

  reportError(error: unknown): void {
    this.emit('error', error instanceof Error ? error : new Error(String(error)));
  }

  // ——— internals ———

  #assertOpen(): void {
    if (!this.#open) throw new ChannelClosed('The channel is closed; open a new one with transport.createChannel().');
  }

  async #exchange(name: string): Promise<Exchange> {
    const exchange = await this.transport.findExchange(name);
    if (!exchange) throw new ExchangeNotFound(name);
    return exchange;
  }

  async #stats(queue: string): Promise<QueueStats> {
    return {
      queue,
      messageCount: await this.transport.store.queueSize(queue),
      consumerCount: this.transport.consumerCount(queue),
    };
  }

  #delivery(claim: Claim, noAck: boolean, consumer: VirtualConsumer | undefined, consumerTag: string | undefined): Delivery {
    const { message } = claim;
    const deliveryInfo: DeliveryInfo = {
      exchange: message.exchange,
      routingKey: message.routingKey,
      queue: claim.queue,
      redelivered: message.redelivered,
      deliveryTag: message.deliveryTag,
    };
    // Set, not spread from a temporary object: this runs once per message.
    if (consumerTag !== undefined) deliveryInfo.consumerTag = consumerTag;
    const { body, contentType, contentEncoding, headers, properties } = message;
    return new VirtualDelivery({ body, contentType, contentEncoding, headers, properties, deliveryInfo, noAck }, this.#settler, claim, consumer);
  }

  /** Not async on the ack path: the store's promise is the delivery's, instead of one more wrapped around it. */
  #settle(claim: Claim, action: SettleAction, consumer: VirtualConsumer | undefined, reason?: string): Promise<void> {
    if (!this.#unsettled.delete(claim)) {
      return Promise.reject(
        new ChannelClosed(
          `Cannot ${action} message ${claim.message.deliveryTag}: its channel closed and the message went back to ` +
            `queue ${JSON.stringify(claim.queue)}. It will be delivered again.`,
        ),
      );
    }
    consumer?.settled();
    const store = this.transport.store;
    try {
      if (action === 'ack') return store.ack(claim);
      if (action === 'requeue') return store.restore(claim, 'tail');
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#reject(claim, reason);
  }

  async #reject(claim: Claim, reason: string | undefined): Promise<void> {
    const store = this.transport.store;
    try {
      await this.#deadLetter(claim, reason);
    } catch (error) {
      // Dead-lettering failed (its exchange is not declared, the store is down): keep the message rather than
      // drop it — it goes back to its queue, and the caller learns why.
      await store.restore(claim, 'tail');
      throw error;
    }
    return store.ack(claim);
  }

  /**
   * Republish a rejected message to its queue's dead-letter exchange, with RabbitMQ's `x-death` record; without one,
   * the store keeps it where it can (Redis: `_kq.dead`), else it is dropped.
   */
  async #deadLetter(claim: Claim, reason: string | undefined): Promise<void> {
    const queue = await this.transport.queueDeclaration(claim.queue);
    if (queue?.deadLetterExchange === undefined) {
      await this.transport.store.keepRejected?.(claim, reason ?? 'rejected');
      return;
    }
    const { message } = claim;
    const headers: Headers = { ...message.headers, 'x-death': xDeath(message, claim.queue) };
    await this.publish(queue.deadLetterExchange, queue.deadLetterRoutingKey ?? message.routingKey, {
      body: message.body,
      contentType: message.contentType,
      contentEncoding: message.contentEncoding,
      headers,
      properties: message.properties,
    });
  }

  #invoke(onMessage: (delivery: Delivery) => void, delivery: Delivery): void {
    try {
      onMessage(delivery);
    } catch (error) {
      // A throwing handler must not stop the consumer; the delivery stays unsettled and is restored on close.
      this.reportError(error);
    }
  }
}

interface DeathRecord {
  count: number;
  reason: string;
  queue: string;
  time: number;
  exchange: string;
  'routing-keys': string[];
}

function xDeath(message: StoredMessage, queue: string): DeathRecord[] {
  const previous = Array.isArray(message.headers['x-death']) ? (message.headers['x-death'] as DeathRecord[]) : [];
  const same = previous.find((record) => record.queue === queue && record.reason === 'rejected');
  const others = previous.filter((record) => record !== same);
  const record: DeathRecord = {
    count: (same?.count ?? 0) + 1,
    reason: 'rejected',
    queue,
    time: Math.floor(Date.now() / 1000),
    exchange: message.exchange,
    'routing-keys': [message.routingKey],
  };
  return [record, ...others];
}
