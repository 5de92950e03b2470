import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  backoffCountdown,
  ChannelClosed,
  TlsFailure,
  KqError,
  type ConsumeOptions,
  type ConsumerHandle,
} from '@kq/core';
import type { AmqplibChannel, AmqplibConsumeMessage } from './amqplib-loader';
import { AckCoalescer } from './ack-coalescer';
import { AmqpDelivery, type DeliverySettler, type SettleAction } from './amqp-delivery';
import { ConsumerCancelled, brokerText, describeChannelLoss, staleDelivery, toKqError } from './amqp-errors';
import { ChannelSlot } from './channel-slot';
import { FairBacklog } from './fair-backlog';
import { toDeliveryInit } from './message-mapping';
import type { ConsumerOwner, TransportContext } from './transport-context';
import { awaitedSubscriptions, checkAwaited, expectFirstDelivery, noteArrival, refillWaitMs, type Subscription } from './queue-refill';

/** One delivery: where it came from, and so where it is settled. Made once per message, kept by its `AmqpDelivery`. */
interface Buffered {
  readonly message: AmqplibConsumeMessage;
  readonly subscription: Subscription;
  readonly channel: AmqplibChannel;
  readonly incarnation: number;
}

/** What settling resolves with: one shared promise, as nothing waits on the broker for an ack. */
const SETTLED: Promise<void> = Promise.resolve();

/**
 * A consumer of one or more queues on an amqplib channel of its own.
 *
 * Prefetch across several queues: RabbitMQ's `basic.qos` is per consumer (each queue would get the full limit) or
 * per channel with `global=true` — which quorum queues refuse, closing the whole *connection* with 540
 * NOT_IMPLEMENTED. So the limit is kept client-side: each queue's subscription gets `prefetch` from the broker
 * (one more when there are several queues, see `#brokerPrefetchFor`), and no more than `prefetch` deliveries are
 * handed to `onMessage` unsettled at once; the rest wait here, one FIFO
 * per queue, and are dispatched round-robin across the queues as deliveries are settled (handed back to the broker
 * if the consumer is cancelled first). With one queue nothing ever waits. Works the same for classic and quorum
 * queues.
 *
 * `setPrefetch` changes the client-side limit at once and sends `basic.qos` live; since RabbitMQ fixes a consumer's
 * limit when it subscribes, each queue is then re-subscribed (the new subscription first, then the old one
 * cancelled, so an auto-delete queue never sees zero consumers).
 *
 * A broker `basic.cancel` (queue deleted) calls `onCancel`, and the queue is checked every `resubscribeInterval`
 * until it exists again, then consumed again. If the channel dies, everything it delivered is requeued by the
 * broker (settling those deliveries fails with `StaleDeliveryError`) and the consumer resumes on a new channel
 * with the same tags and prefetch once the connection is back.
 */
export class AmqpConsumer implements ConsumerHandle {
  readonly tag: string;
  readonly queues: readonly string[];
  readonly #ctx: TransportContext;
  readonly #owner: ConsumerOwner;
  readonly #options: ConsumeOptions;
  readonly #noAck: boolean;
  readonly #slot: ChannelSlot;
  /** The acks of the current channel (a new channel gets a new one: delivery tags start again at 1). */
  #acks: { channel: AmqplibChannel; coalescer: AckCoalescer } | undefined;
  readonly #subscriptions: Subscription[];
  #prefetch: number;
  #brokerPrefetch = -1;
  #inflight = 0;
  readonly #backlog: FairBacklog<Subscription, Buffered>;
  /** Round-robin bookkeeping (arrival and settle times per queue) is kept only when there are several queues. */
  readonly #multiQueue: boolean;
  /** Settles this consumer's deliveries (one object for all of them, rather than a closure each). */
  readonly #settler: DeliverySettler<Buffered> = {
    settle: (origin, action) => this.#settle(origin, action),
    holds: (origin) => this.#owner.isOpen && this.#slot.owns(origin.channel, origin.incarnation),
  };
  #pumpScheduled = false;
  #refillTimer: NodeJS.Timeout | undefined;
  /** Moving average of the time from settling a delivery to the next delivery of the same queue, in ms. */
  #refillLatency = 1;
  /**
   * True while a channel's subscriptions are being set up: deliveries wait in the backlog until every queue is
   * subscribed, so the first queue does not get a head start (fairness across queues).
   */
  #settingUp = false;
  #started = false;
  #cancelled = false;
  #resuming = false;
  #watchTimer: NodeJS.Timeout | undefined;
  #qos: Promise<void> = Promise.resolve();

  constructor(ctx: TransportContext, owner: ConsumerOwner, options: ConsumeOptions) {
    if (options.queues.length === 0) throw new KqError('A consumer needs at least one queue (ConsumeOptions.queues is empty).');
    this.#ctx = ctx;
    this.#owner = owner;
    this.#options = options;
    this.#noAck = options.noAck ?? false;
    this.tag = options.consumerTag ?? `kq-${randomUUID()}`;
    this.queues = [...new Set(options.queues)];
    this.#prefetch = normalisePrefetch(options.prefetch);
    this.#subscriptions = this.queues.map((queue, index) => {
      const baseTag = this.queues.length === 1 ? this.tag : `${this.tag}.${index}`;
      return {
        queue,
        baseTag,
        tag: baseTag,
        resubscriptions: 0,
        state: 'idle',
        lastArrival: 0,
        settledSinceArrival: 0,
        lastSettle: 0,
        expectUntil: 0,
        refillChecks: 0,
        presumedEmpty: false,
      };
    });
    this.#backlog = new FairBacklog(this.#subscriptions);
    this.#multiQueue = this.#subscriptions.length > 1;
    this.#slot = new ChannelSlot(ctx.supervisor, 'plain', {
      onOpen: (channel, incarnation) => this.#setUp(channel, incarnation),
      onLost: (channel, error) => this.#onLost(channel, error),
    });
  }

  get prefetch(): number {
    return this.#prefetch;
  }

  /** Subscribes every queue; a missing queue fails with `QueueNotFound`. */
  async start(): Promise<void> {
    try {
      await this.#slot.acquire();
    } catch (error) {
      this.#cancelled = true;
      await this.#slot.close();
      const missing = this.#subscriptions.find((subscription) => brokerText(error).includes(`'${subscription.queue}'`));
      throw toKqError(error, { operation: `consume from ${this.queues.map((queue) => JSON.stringify(queue)).join(', ')}`, queue: missing?.queue ?? this.queues[0] });
    }
  }

  async setPrefetch(count: number): Promise<void> {
    this.#prefetch = normalisePrefetch(count);
    this.#schedulePump();
    this.#qos = this.#qos.then(() => this.#applyBrokerPrefetch()).catch((error: unknown) => this.#owner.reportError(error));
    await this.#qos;
  }

  async cancel(): Promise<void> {
    if (this.#cancelled) return;
    this.#cancelled = true;
    clearTimeout(this.#watchTimer);
    clearTimeout(this.#refillTimer);
    await this.#qos;
    const channel = this.#slot.current;
    if (channel) {
      for (const subscription of this.#subscriptions) {
        if (subscription.state === 'active') await channel.cancel(subscription.tag).catch(() => undefined);
        subscription.state = 'idle';
      }
      this.#returnBacklog(channel);
    }
    // Handed-out deliveries stay settleable: the channel closes once the last of them is settled.
    if (this.#noAck || this.#inflight === 0) await this.#finish();
  }

  /** The owning channel is closing: stop and let the broker requeue whatever was not settled. */
  async close(): Promise<void> {
    this.#cancelled = true;
    clearTimeout(this.#watchTimer);
    clearTimeout(this.#refillTimer);
    this.#backlog.drain();
    await this.#finish();
  }

  async #finish(): Promise<void> {
    this.#acks?.coalescer.flush(); // acks still waiting for the end of the turn go out before the channel closes
    await this.#slot.close();
    this.#owner.forgetConsumer(this);
  }

  // ——— channel set-up, subscriptions, recovery ———

  async #setUp(channel: AmqplibChannel, incarnation: number): Promise<void> {
    // A new channel holds nothing yet: whatever the old one delivered was requeued by the broker.
    this.#inflight = 0;
    this.#acks = { channel, coalescer: new AckCoalescer(channel) };
    this.#backlog.drain();
    clearTimeout(this.#refillTimer);
    this.#refillTimer = undefined;
    this.#pumpScheduled = false;
    this.#settingUp = true;
    try {
      if (!this.#noAck) {
        const brokerPrefetch = this.#brokerPrefetchFor(this.#prefetch);
        await channel.prefetch(brokerPrefetch, false);
        this.#brokerPrefetch = brokerPrefetch;
      }
      for (const subscription of this.#subscriptions) {
        if (this.#started) {
          if (subscription.state === 'cancelled') continue; // the watcher brings it back when its queue exists
          if (!(await this.#queueAvailable(subscription))) continue;
        }
        await this.#subscribe(channel, incarnation, subscription);
      }
      this.#started = true;
    } finally {
      this.#settingUp = false;
      this.#schedulePump();
    }
  }

  async #subscribe(channel: AmqplibChannel, incarnation: number, subscription: Subscription): Promise<void> {
    const tag = subscription.tag;
    await channel.consume(subscription.queue, (message) => this.#onMessage(subscription, tag, channel, incarnation, message), {
      consumerTag: tag,
      noAck: this.#noAck,
    });
    subscription.state = 'active';
    expectFirstDelivery(subscription);
  }

  /** On resume: the queue exists, or is ours to declare again; otherwise it is treated as cancelled. */
  async #queueAvailable(subscription: Subscription): Promise<boolean> {
    if (await this.#ctx.queueExists(subscription.queue)) return true;
    if (await this.#ctx.redeclareQueue(subscription.queue)) return true;
    this.#markCancelled(subscription);
    return false;
  }

  #onLost(_channel: AmqplibChannel, error: Error | undefined): void {
    this.#backlog.drain();
    this.#inflight = 0;
    for (const subscription of this.#subscriptions) if (subscription.state === 'active') subscription.state = 'idle';
    if (this.#cancelled) return;
    if (error) this.#owner.reportError(describeChannelLoss(this.tag, error));
    void this.#resume();
  }

  async #resume(): Promise<void> {
    if (this.#resuming) return;
    this.#resuming = true;
    try {
      for (let attempt = 1; !this.#cancelled && this.#owner.isOpen && !this.#slot.isClosed; attempt++) {
        try {
          await this.#slot.acquire();
          return;
        } catch (error) {
          if (this.#cancelled || this.#slot.isClosed) return;
          // The broker's certificate went bad (the supervisor gave up on it): every attempt would fail alike. Said as
          // it is, once; the consumer stops, and its owner (a worker) decides what to do.
          if (error instanceof TlsFailure) return this.#owner.reportError(error);
          this.#owner.reportError(
            new KqError(`Consumer ${this.tag} could not resume (attempt ${attempt}): ${brokerText(error)}; retrying.`, { cause: error }),
          );
          await sleep(backoffCountdown(attempt, { factor: 100, maximum: 5000, jitter: false }));
        }
      }
    } finally {
      this.#resuming = false;
    }
  }

  #markCancelled(subscription: Subscription): void {
    subscription.state = 'cancelled';
    const reason = new ConsumerCancelled(subscription.queue, this.tag);
    if (this.#options.onCancel) {
      try {
        this.#options.onCancel(reason);
      } catch (error) {
        this.#owner.reportError(error);
      }
    } else {
      this.#owner.reportError(reason);
    }
    this.#watch();
  }

  /** Checks cancelled subscriptions' queues periodically and consumes them again once they exist. */
  #watch(): void {
    if (this.#watchTimer !== undefined || this.#cancelled) return;
    this.#watchTimer = setTimeout(() => {
      this.#watchTimer = undefined;
      void this.#checkCancelled().finally(() => {
        if (!this.#cancelled && this.#subscriptions.some((subscription) => subscription.state === 'cancelled')) this.#watch();
      });
    }, this.#ctx.options.resubscribeInterval);
  }

  async #checkCancelled(): Promise<void> {
    for (const subscription of this.#subscriptions) {
      if (subscription.state !== 'cancelled' || this.#cancelled) continue;
      const channel = this.#slot.current;
      if (!channel) return; // resuming: the new channel's set-up will look again
      const incarnation = this.#slot.incarnation;
      try {
        if (!(await this.#ctx.queueExists(subscription.queue))) continue;
        if (this.#cancelled || !this.#slot.owns(channel, incarnation)) return;
        await this.#subscribe(channel, incarnation, subscription);
      } catch (error) {
        this.#owner.reportError(error);
      }
    }
  }

  async #applyBrokerPrefetch(): Promise<void> {
    if (this.#noAck || this.#cancelled) return;
    const target = this.#brokerPrefetchFor(this.#prefetch);
    const channel = this.#slot.current;
    if (!channel || target === this.#brokerPrefetch) return; // a resuming channel sets the current value itself
    const incarnation = this.#slot.incarnation;
    await channel.prefetch(target, false);
    this.#brokerPrefetch = target;
    for (const subscription of this.#subscriptions) {
      if (subscription.state !== 'active' || !this.#slot.owns(channel, incarnation)) continue;
      const previous = subscription.tag;
      subscription.resubscriptions += 1;
      subscription.tag = `${subscription.baseTag}~${subscription.resubscriptions}`;
      await this.#subscribe(channel, incarnation, subscription);
      await channel.cancel(previous);
    }
  }

  // ——— deliveries ———

  #onMessage(
    subscription: Subscription,
    tag: string,
    channel: AmqplibChannel,
    incarnation: number,
    message: AmqplibConsumeMessage | null,
  ): void {
    if (message === null) {
      // basic.cancel from the broker. One for a tag we already replaced is not news.
      if (subscription.tag === tag && subscription.state === 'active' && !this.#cancelled) this.#markCancelled(subscription);
      return;
    }
    if (this.#noAck) {
      this.#dispatch({ message, subscription, channel, incarnation });
      return;
    }
    const acks = this.#coalescerOf(channel);
    acks?.received(message);
    if (this.#cancelled) {
      // In flight when we cancelled: never handed out, so give it straight back.
      this.#rejectQuietly(channel, message, true);
      return;
    }
    // Not dispatched right away: amqplib emits every delivery of one socket read in a row, and RabbitMQ sends each
    // queue's in bursts; collecting them first lets the pump (a microtask later) hand them out round-robin.
    if (this.#multiQueue) this.#arrived(subscription);
    this.#backlog.push(subscription, { message, subscription, channel, incarnation });
    if (this.#refillTimer !== undefined && this.#refillWait() === 0) {
      // The delivery waited for has come: hand out now.
      clearTimeout(this.#refillTimer);
      this.#refillTimer = undefined;
      this.#pumpScheduled = false;
    }
    this.#schedulePump();
  }

  /** Round-robin bookkeeping: a delivery of `subscription` arrived now. */
  #arrived(subscription: Subscription): void {
    const sample = noteArrival(subscription, Date.now());
    if (sample !== undefined) this.#refillLatency = 0.8 * this.#refillLatency + 0.2 * sample;
  }

  /**
   * What each queue's subscription asks of the broker. One queue: exactly the prefetch. Several: one more, held in
   * reserve, so every queue still has a delivery waiting here when its round-robin turn comes — otherwise the order
   * in which the queues' refills come back over the network would decide who is served next.
   */
  #brokerPrefetchFor(prefetch: number): number {
    return prefetch > 0 && this.#subscriptions.length > 1 ? prefetch + 1 : prefetch;
  }

  #hasRoom(): boolean {
    return this.#prefetch === 0 || this.#inflight < this.#prefetch;
  }

  #dispatch(origin: Buffered): void {
    try {
      const init = toDeliveryInit(origin.message, origin.subscription.queue, this.tag, this.#noAck, this.#ctx.ladder);
      this.#options.onMessage(new AmqpDelivery(init, this.#settler, origin));
    } catch (error) {
      // A throwing handler must not stop the consumer; the delivery stays unsettled (requeued if the channel dies).
      this.#owner.reportError(error);
    }
  }

  #settle(origin: Buffered, action: SettleAction): Promise<void> {
    const { message, subscription, channel, incarnation } = origin;
    const tag = message.fields.deliveryTag;
    const queue = subscription.queue;
    if (!this.#owner.isOpen) {
      return Promise.reject(
        new ChannelClosed(
          `Cannot ${action} message ${tag} from queue ${JSON.stringify(queue)}: its channel was closed, so the broker ` +
            `requeued it and will deliver it again.`,
        ),
      );
    }
    if (!this.#slot.owns(channel, incarnation)) return Promise.reject(staleDelivery(action, tag, queue));
    let sent = SETTLED;
    try {
      const acks = this.#coalescerOf(channel);
      if (!acks) throw new Error('no longer the consumer channel');
      if (action === 'ack') sent = acks.ack(message);
      else acks.reject(message, action === 'requeue');
    } catch {
      return Promise.reject(staleDelivery(action, tag, queue));
    }
    if (!this.#noAck) {
      this.#inflight = Math.max(0, this.#inflight - 1);
      if (this.#multiQueue) {
        subscription.settledSinceArrival += 1;
        subscription.lastSettle = Date.now();
      }
      if (this.#cancelled && this.#inflight === 0) void this.#finish();
      else this.#schedulePump();
    }
    return sent;
  }

  #schedulePump(): void {
    if (this.#pumpScheduled || this.#backlog.size === 0) return;
    this.#pumpScheduled = true;
    // Never a direct call, so a handler that settles synchronously does not recurse.
    queueMicrotask(() => this.#pump());
  }

  #pump(): void {
    this.#pumpScheduled = false;
    while (this.#backlog.size > 0 && this.#hasRoom() && !this.#cancelled && !this.#settingUp) {
      const wait = this.#refillWait();
      if (wait > 0) {
        this.#pumpScheduled = true;
        this.#refillTimer = setTimeout(() => {
          this.#refillTimer = undefined;
          void this.#checkMissing(this.#expectedMissing()).finally(() => this.#pump());
        }, wait);
        return;
      }
      const next = this.#backlog.shift() as Buffered;
      if (!this.#slot.owns(next.channel, next.incarnation)) continue; // its channel died: the broker has it again
      this.#inflight += 1;
      this.#dispatch(next);
    }
  }

  /** How long the pump waits for a queue's next delivery to keep the round-robin turn (see queue-refill.ts). */
  #refillWait(): number {
    if (!this.#multiQueue || this.#expectedMissing().length === 0) return 0;
    return refillWaitMs(this.#refillLatency);
  }

  #expectedMissing(): Subscription[] {
    return awaitedSubscriptions(this.#subscriptions, (subscription) => this.#backlog.has(subscription), Date.now());
  }

  /** A refill wait ran out for these queues: skip the ones the broker says are empty, or that were waited for enough. */
  async #checkMissing(missing: readonly Subscription[]): Promise<void> {
    this.#pumpScheduled = true; // hold the pump while the broker is asked
    try {
      await checkAwaited(missing, (queue) => this.#ctx.queueDepth(queue));
    } finally {
      this.#pumpScheduled = false;
    }
  }

  #returnBacklog(channel: AmqplibChannel): void {
    for (const buffered of this.#backlog.drain()) if (buffered.channel === channel) this.#rejectQuietly(channel, buffered.message, true);
  }

  #coalescerOf(channel: AmqplibChannel): AckCoalescer | undefined {
    return this.#acks?.channel === channel ? this.#acks.coalescer : undefined;
  }

  #rejectQuietly(channel: AmqplibChannel, message: AmqplibConsumeMessage, requeue: boolean): void {
    try {
      const acks = this.#coalescerOf(channel);
      if (acks) acks.reject(message, requeue);
      else channel.reject(message, requeue);
    } catch {
      // The channel is gone, which requeues the message anyway.
    }
  }
}

function normalisePrefetch(count: number | undefined): number {
  const value = Math.trunc(count ?? 0);
  // basic.qos prefetch-count is a 16-bit field; larger means "no practical limit" anyway.
  return Number.isFinite(value) ? Math.min(65_535, Math.max(0, value)) : 0;
}
