import { ChannelClosed } from '@kq/core';
import type { AmqplibChannel, AmqplibConfirmChannel } from './amqplib-loader';
import { closeQuietly } from './close-within';
import type { ConnectionSupervisor } from './connection-supervisor';

export type SlotKind = 'plain' | 'confirm';

export interface SlotHooks<C extends AmqplibChannel> {
  /** Prepares a freshly opened channel (listeners, qos, consumers) before anyone else may use it. */
  onOpen?: (channel: C, incarnation: number) => Promise<void>;
  /** The channel died under us (`error` set when the broker closed it for a reason, or the connection dropped). */
  onLost?: (channel: C, error: Error | undefined) => void;
}

/**
 * One logical AMQP channel that survives its amqplib channels: `acquire()` hands out the open channel, or opens a
 * new one on the current connection (waiting for a lost connection to come back). A channel the broker closed —
 * after a 404 or 406, on connection loss — is simply replaced on the next `acquire()`. `incarnation` increases with
 * every channel opened, so holders of deliveries can tell whether their channel is still the live one.
 */
export class ChannelSlot<C extends AmqplibChannel = AmqplibChannel> {
  readonly #supervisor: ConnectionSupervisor;
  readonly #kind: SlotKind;
  readonly #hooks: SlotHooks<C>;
  #channel: C | undefined;
  /** A channel being prepared by `onOpen`: deliveries may already arrive on it (consumers subscribe there). */
  #preparing: C | undefined;
  #opening: Promise<C> | undefined;
  #incarnation = 0;
  #closed = false;

  constructor(supervisor: ConnectionSupervisor, kind: SlotKind, hooks: SlotHooks<C> = {}) {
    this.#supervisor = supervisor;
    this.#kind = kind;
    this.#hooks = hooks;
  }

  /** The open channel, if there is one right now (the fast path for publishes and acks). */
  get current(): C | undefined {
    return this.#channel;
  }

  get incarnation(): number {
    return this.#incarnation;
  }

  get isClosed(): boolean {
    return this.#closed;
  }

  /** True while `channel` is this slot's live channel (or the one being prepared). */
  owns(channel: AmqplibChannel, incarnation: number): boolean {
    return (this.#channel === channel || this.#preparing === channel) && this.#incarnation === incarnation;
  }

  acquire(timeoutMs?: number): Promise<C> {
    if (this.#closed) return Promise.reject(new ChannelClosed('The channel is closed; open a new one with transport.createChannel().'));
    if (this.#channel) return Promise.resolve(this.#channel);
    this.#opening ??= this.#open(timeoutMs).finally(() => (this.#opening = undefined));
    return this.#opening;
  }

  /** Closes the current amqplib channel; the slot stays usable and the next `acquire()` opens a new one. */
  async reset(): Promise<void> {
    const channel = this.#channel;
    this.#channel = undefined;
    if (channel) await closeQuietly(channel);
  }

  /** Closes the channel for good. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // A channel still waiting for the connection is closed by its opener once it has one.
    const channel = this.#channel ?? this.#preparing;
    this.#channel = undefined;
    if (channel) await closeQuietly(channel);
  }

  async #open(timeoutMs: number | undefined): Promise<C> {
    const connection = await this.#supervisor.connection(timeoutMs);
    const channel = (this.#kind === 'confirm' ? await connection.createConfirmChannel() : await connection.createChannel()) as
      | C
      | AmqplibConfirmChannel;
    const opened = channel as C;
    const incarnation = ++this.#incarnation;
    let lastError: Error | undefined;
    let alive = true;
    // amqplib emits 'error' (with the broker's reply code) just before 'close'; an unheard 'error' would throw.
    opened.on('error', (error: Error) => (lastError = error));
    opened.on('close', () => {
      alive = false;
      // Only the live channel dying is a loss: one closed on purpose (reset, close) or one that failed while being
      // prepared (its opener gets the error) is not.
      if (this.#channel !== opened) return;
      this.#channel = undefined;
      if (!this.#closed) this.#hooks.onLost?.(opened, lastError);
    });
    if (this.#closed) {
      await closeQuietly(opened);
      throw new ChannelClosed('The channel was closed while it was being opened.');
    }
    this.#preparing = opened;
    try {
      await this.#hooks.onOpen?.(opened, incarnation);
    } catch (error) {
      await closeQuietly(opened);
      throw error;
    } finally {
      this.#preparing = undefined;
    }
    if (this.#closed) {
      await closeQuietly(opened);
      throw new ChannelClosed('The channel was closed while it was being opened.');
    }
    if (!alive) throw new ChannelClosed(`The channel closed while it was being prepared${lastError ? `: ${lastError.message}` : ''}.`);
    this.#channel = opened;
    return opened;
  }
}
