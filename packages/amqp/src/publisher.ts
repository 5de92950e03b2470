import { setTimeout as sleep } from 'node:timers/promises';
import Denque from 'denque';
import { backoffCountdown, ChannelClosed, ConnectionLost, EncodeError, PublishRejected, UnroutableError, type Queue } from '@kq/core';
import type { AmqplibChannel, AmqplibConfirmChannel, AmqplibMessage, AmqplibOptions } from './amqplib-loader';
import { brokerText, isConnectionFailure, replyCodeOf, toKqError } from './amqp-errors';
import { ChannelSlot } from './channel-slot';
import { publishRefusalReason } from './publish-refusal';
import type { ConnectionSupervisor } from './connection-supervisor';

export interface PublishRequest {
  /** Where the message is sent on the wire (a delay-ladder exchange for delayed messages). */
  exchange: string;
  routingKey: string;
  content: Buffer;
  options: AmqplibOptions.Publish;
  mandatory: boolean;
  /** What the caller published to, for error messages. */
  target: { exchange: string; routingKey: string };
}

interface PendingPublish extends PublishRequest {
  resolve: () => void;
  reject: (error: Error) => void;
  /** The broker returned it (basic.return) on the channel it was last sent on; its confirm follows. */
  returned: boolean;
  /** When the caller published it: a publish waiting for a lost connection fails `recoveryTimeout` after this. */
  startedAt: number;
  /** Channels the broker closed while this message was unconfirmed on them (a refused publish closes its channel). */
  channelErrors: number;
  /** The incarnation of the channel it was last sent on (which channel a confirm or nack speaks for). */
  incarnation: number;
}

/** A message on a channel the broker closed this many times (not a connection loss) is refused, not retried. */
const MAX_CHANNEL_ERRORS = 3;
/**
 * A channel that had a publish nacked is replaced this long after the nack: 50 ms, doubling with every replacement
 * that did not help (the new channel was nacked before it confirmed anything), up to 1 s. So a queue that stays full
 * does not churn channels faster than once a second, while a quorum queue that elected a new leader is published
 * to again within 50 ms plus a few doublings.
 */
const NACK_REPLACE_FIRST_MS = 50;
const NACK_REPLACE_MAX_MS = 1000;

export interface PublisherOptions {
  confirms: boolean;
  recoveryTimeout: number;
  closeTimeout: number;
  onError: (error: Error) => void;
  /** The declared queues a publish to `exchange` with `routingKey` reaches, to say why the broker refused it. */
  routedQueues?: (exchange: string, routingKey: string, headers: Record<string, unknown>) => readonly Queue[];
}

/**
 * Publishes on a channel of its own (a confirm channel by default), so a failing declaration elsewhere never
 * takes unconfirmed messages down with it.
 *
 * - With confirms, `publish` resolves on basic.ack and rejects with `PublishRejected` on basic.nack. A mandatory
 *   message the broker returns is matched to its publish (RabbitMQ sends basic.return before the basic.ack of the
 *   same message; the match is the oldest unconfirmed mandatory publish with the same exchange, routing key and
 *   body) and rejects with `UnroutableError`.
 * - Backpressure: when amqplib's `publish` returns false, later publishes queue until the channel drains.
 * - If the channel or connection dies before a confirm arrives, the message is sent again on the next channel
 *   (at-least-once: the broker may have routed the first copy), in the original order; a publish that cannot be
 *   sent within `recoveryTimeout` of being made fails with `ConnectionLost`. None is dropped silently.
 */
export class Publisher {
  readonly #slot: ChannelSlot;
  readonly #options: PublisherOptions;
  /** Messages to send again (their channel died before confirming), oldest first; they go before `#queue`. */
  #resend = new Denque<PendingPublish>();
  /** Messages not yet sent (no channel, or the channel is draining), in publish order. */
  #queue = new Denque<PendingPublish>();
  /** Mandatory messages sent and not yet confirmed, in send order (a Set iterates in insertion order). */
  #returnable = new Set<PendingPublish>();
  #unconfirmed = 0;
  #pumping = false;
  #pumpScheduled = false;
  #draining: { channel: AmqplibChannel; done: Promise<void>; release: () => void } | undefined;
  #closed = false;
  #final = false;
  #idleWaiters: Array<() => void> = [];
  /** Channels replaced after nacks since a publish was last confirmed on a channel opened after such a replacement. */
  #nackReplacements = 0;
  /** Channels up to this incarnation were nacked and are (being) replaced: their later nacks change nothing. */
  #retiredIncarnation = 0;
  /** A nacked channel waiting to be replaced: nothing more is sent on it, publishes wait for the next channel. */
  #retiring: { channel: AmqplibChannel; done: Promise<void>; release: () => void; timer: NodeJS.Timeout } | undefined;

  constructor(supervisor: ConnectionSupervisor, options: PublisherOptions) {
    this.#options = options;
    this.#slot = new ChannelSlot(supervisor, options.confirms ? 'confirm' : 'plain', {
      onOpen: async (channel) => {
        channel.on('return', (message: AmqplibMessage) => this.#onReturn(message));
      },
      onLost: (channel, error) => {
        this.#returnable.clear();
        this.#endDraining(channel);
        if (this.#retiring?.channel === channel) this.#endRetiring();
        // amqplib has already failed the unconfirmed messages ('channel closed'), so they are in #resend; the pump
        // that re-sends them runs in a microtask, after this.
        if (error && replyCodeOf(error) !== undefined) this.#failRefused(error);
        if (this.#queue.length > 0 || this.#resend.length > 0) this.#schedulePump();
      },
    });
  }

  /** Messages accepted by `publish` and not yet settled either way. */
  get pending(): number {
    return this.#queue.length + this.#resend.length + this.#unconfirmed;
  }

  publish(request: PublishRequest): Promise<void> {
    if (this.#closed) return Promise.reject(new ChannelClosed('The channel is closed; open a new one with transport.createChannel().'));
    return new Promise<void>((resolve, reject) => {
      const pending: PendingPublish = {
        exchange: request.exchange,
        routingKey: request.routingKey,
        content: request.content,
        options: request.options,
        mandatory: request.mandatory,
        target: request.target,
        resolve,
        reject,
        returned: false,
        startedAt: Date.now(),
        channelErrors: 0,
        incarnation: 0,
      };
      const channel = this.#slot.current;
      // Fast path: a live channel with nothing queued ahead.
      if (channel && !this.#draining && !this.#retiring && !this.#pumping && this.#queue.length === 0 && this.#resend.length === 0) {
        if (this.#send(channel, pending)) return;
      } else {
        this.#queue.push(pending);
      }
      this.#schedulePump();
    });
  }

  /** Waits (up to `closeTimeout`) for what is queued to be sent and confirmed, then closes the channel. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.pending > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.#idleWaiters.push(resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#options.closeTimeout))),
      ]);
      clearTimeout(timer);
    }
    this.#final = true;
    this.#endRetiring();
    const unsent = this.#takeUnsent();
    for (const pending of unsent) {
      pending.reject(new ChannelClosed(`The channel was closed before the message for ${describe(pending)} could be sent; it was not published.`));
    }
    // Unconfirmed messages are failed by amqplib's channel close ('channel closed' ⇒ rejected below, as #final).
    await this.#slot.close();
  }

  /** Fails everything not yet confirmed at once (the transport was terminated); nothing is sent any more. */
  abort(reason: Error): void {
    this.#closed = true;
    this.#final = true;
    this.#endRetiring();
    for (const item of this.#takeUnsent()) item.reject(reason);
    void this.#slot.close();
  }

  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    // A microtask, so a channel's 'close' listeners (ours included) have all run before the pump looks at the slot.
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      void this.#pump();
    });
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (!this.#final && (this.#resend.length > 0 || this.#queue.length > 0)) {
        if (this.#draining || this.#retiring) {
          await (this.#draining ?? this.#retiring)?.done;
          continue;
        }
        let channel: AmqplibChannel;
        try {
          channel = await this.#slot.acquire(this.#remainingWait());
        } catch (error) {
          this.#failWaiting(error);
          // A broker that refuses connections outright fails fast; do not spin on it.
          if (this.#resend.length > 0 || this.#queue.length > 0) await sleep(200);
          continue;
        }
        while (!this.#draining && !this.#retiring && this.#slot.current === channel) {
          const next = this.#resend.shift() ?? this.#queue.shift();
          if (!next) break;
          if (!this.#send(channel, next)) break;
        }
      }
    } finally {
      this.#pumping = false;
      this.#checkIdle();
    }
  }

  /** Sends one message; false (with the message put back at the head) when the channel turned out to be dead. */
  #send(channel: AmqplibChannel, pending: PendingPublish): boolean {
    if (pending.mandatory && this.#options.confirms) this.#returnable.add(pending);
    // `channel` is the slot's current channel (callers check), so this is its incarnation.
    pending.incarnation = this.#slot.incarnation;
    let written: boolean;
    try {
      if (this.#options.confirms) {
        written = (channel as AmqplibConfirmChannel).publish(pending.exchange, pending.routingKey, pending.content, pending.options, (error: unknown) =>
          this.#onConfirm(pending, error),
        );
        this.#unconfirmed++;
      } else {
        written = channel.publish(pending.exchange, pending.routingKey, pending.content, pending.options);
        pending.resolve();
      }
    } catch (error) {
      if (pending.mandatory) this.#returnable.delete(pending);
      if (isConnectionFailure(error)) {
        this.#resend.unshift(pending);
        return false;
      }
      // amqplib refuses to encode it (a header table over 64 KiB, a value it has no type for): nothing was sent.
      const reason = error instanceof Error ? error.message : String(error);
      pending.reject(new EncodeError(`Cannot publish the message for ${describe(pending)}: ${reason}`, { cause: error }));
      return true;
    }
    if (!written) this.#startDraining(channel);
    return true;
  }

  #onConfirm(pending: PendingPublish, error: unknown): void {
    this.#unconfirmed--;
    if (pending.mandatory) this.#returnable.delete(pending);
    if (error === null || error === undefined) {
      // Confirmed on a channel opened after the last nack-replacement: that replacement helped.
      if (pending.incarnation > this.#retiredIncarnation) this.#nackReplacements = 0;
      if (pending.returned) pending.reject(new UnroutableError(pending.target.exchange, pending.target.routingKey));
      else pending.resolve();
    } else if (error instanceof Error && error.message === 'message nacked') {
      const queues = this.#options.routedQueues?.(pending.target.exchange, pending.target.routingKey, headersOf(pending)) ?? [];
      pending.reject(
        new PublishRejected(
          `The broker refused the message for ${describe(pending)} (basic.nack): ${publishRefusalReason(queues)}. ` +
            `It was not delivered; publish it again.`,
        ),
      );
      this.#retireAfterNack(pending.incarnation);
    } else if (this.#final) {
      pending.reject(
        new ChannelClosed(
          `The channel was closed before the broker confirmed the message for ${describe(pending)}; it may or may not have been delivered.`,
        ),
      );
    } else {
      // The channel died before confirming: the broker may or may not have it. Send it again (at-least-once).
      pending.returned = false;
      this.#resend.push(pending);
      this.#schedulePump();
    }
    this.#checkIdle();
  }

  /**
   * A channel that published to a quorum queue while its leader was being re-elected can stay refused: on RabbitMQ
   * 3.10, after the leader's node died, every later publish on that channel was nacked while a new channel's were
   * accepted once a leader was elected (packages/amqp/test/cluster). So a nack retires the channel: nothing more is
   * sent on it (what it has in flight still gets its confirms), and after a backoff — a channel opened before the
   * election is over is refused too — it is closed and the next one opened. What it left unconfirmed is sent again
   * on the next one (at-least-once).
   */
  #retireAfterNack(incarnation: number): void {
    const channel = this.#slot.current;
    // A channel already retired, or one that is gone (its unconfirmed publishes go out again on the next one).
    if (this.#final || incarnation <= this.#retiredIncarnation || !channel || this.#slot.incarnation !== incarnation) return;
    this.#retiredIncarnation = incarnation;
    const delay = backoffCountdown(this.#nackReplacements, { factor: NACK_REPLACE_FIRST_MS, maximum: NACK_REPLACE_MAX_MS, jitter: false });
    this.#nackReplacements++;
    let release!: () => void;
    const done = new Promise<void>((resolve) => (release = resolve));
    const timer = setTimeout(() => void this.#slot.reset().then(() => this.#endRetiring()), delay);
    timer.unref();
    this.#retiring = { channel, done, release, timer };
  }

  #endRetiring(): void {
    const retiring = this.#retiring;
    if (!retiring) return;
    this.#retiring = undefined;
    clearTimeout(retiring.timer);
    // A channel closed on purpose reports no loss, so a wait for it to drain ends here.
    this.#endDraining(retiring.channel);
    retiring.release();
    if (this.#queue.length > 0 || this.#resend.length > 0) this.#schedulePump();
  }

  /**
   * The broker closed the publisher channel because of a publish (404 no such exchange, 403 access refused, 406 an
   * invalid property): the messages it names are refused with the mapped error instead of being sent again — an
   * exchange that does not exist would close every new channel the same way. Messages to other exchanges are
   * sent again; a message whose channel the broker keeps closing is refused after a few tries.
   */
  #failRefused(error: Error): void {
    const exchange = /exchange '([^']*)'/.exec(brokerText(error))?.[1];
    this.#resend = new Denque(
      this.#resend.toArray().filter((pending) => {
        pending.channelErrors += 1;
        const refused = exchange !== undefined ? pending.exchange === exchange : pending.channelErrors >= MAX_CHANNEL_ERRORS;
        if (refused) pending.reject(toKqError(error, { operation: `publish to ${describe(pending)}`, exchange: pending.exchange }));
        return !refused;
      }),
    );
  }

  #onReturn(message: AmqplibMessage): void {
    const { exchange, routingKey } = message.fields;
    if (!this.#options.confirms) {
      this.#options.onError(new UnroutableError(exchange, routingKey));
      return;
    }
    for (const pending of this.#returnable) {
      if (!pending.returned && pending.exchange === exchange && pending.routingKey === routingKey && pending.content.equals(message.content)) {
        pending.returned = true;
        return;
      }
    }
  }

  #startDraining(channel: AmqplibChannel): void {
    if (this.#draining) return;
    let release!: () => void;
    const done = new Promise<void>((resolve) => (release = resolve));
    this.#draining = { channel, done, release };
    channel.once('drain', () => this.#endDraining(channel));
  }

  #endDraining(channel: AmqplibChannel): void {
    const draining = this.#draining;
    if (draining?.channel !== channel) return;
    this.#draining = undefined;
    draining.release();
    if (this.#queue.length > 0 || this.#resend.length > 0) this.#schedulePump();
  }

  #remainingWait(): number {
    const oldest = this.#resend.peekFront() ?? this.#queue.peekFront();
    if (!oldest) return this.#options.recoveryTimeout;
    return Math.max(0, oldest.startedAt + this.#options.recoveryTimeout - Date.now());
  }

  /** No channel could be had: fail what has waited too long, or everything if the failure is final. */
  #failWaiting(error: unknown): void {
    const recoverable = isConnectionFailure(error) && !this.#slot.isClosed;
    const now = Date.now();
    const keep = (pending: PendingPublish): boolean => {
      if (recoverable && now - pending.startedAt < this.#options.recoveryTimeout) return true;
      const reason = error instanceof Error ? error.message : String(error);
      pending.reject(
        recoverable
          ? new ConnectionLost(
              `The message for ${describe(pending)} could not be published within ${this.#options.recoveryTimeout} ms: ${reason}`,
              { cause: error },
            )
          : error instanceof Error
            ? error
            : new ConnectionLost(reason),
      );
      return false;
    };
    this.#resend = new Denque(this.#resend.toArray().filter(keep));
    this.#queue = new Denque(this.#queue.toArray().filter(keep));
  }

  /** Removes and returns everything not yet sent, resends first (oldest first within each). */
  #takeUnsent(): PendingPublish[] {
    const unsent = [...this.#resend.toArray(), ...this.#queue.toArray()];
    this.#resend.clear();
    this.#queue.clear();
    return unsent;
  }

  #checkIdle(): void {
    if (this.pending > 0 || this.#idleWaiters.length === 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

function headersOf(pending: PublishRequest): Record<string, unknown> {
  return (pending.options.headers as Record<string, unknown> | undefined) ?? {};
}

function describe(pending: PublishRequest): string {
  return `exchange ${JSON.stringify(pending.target.exchange)} with routing key ${JSON.stringify(pending.target.routingKey)}`;
}
