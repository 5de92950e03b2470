import Denque from 'denque';
import type { AmqplibChannel, AmqplibConsumeMessage } from './amqplib-loader';

/** Where one delivery of the channel stands. */
const enum Settle {
  /** Not settled yet (handed out, or waiting in the backlog). */
  Open,
  /** Acked by the application; the frame is not sent yet. */
  AckPending,
  /** Its frame went out (a reject, a requeue, or an ack sent on its own). */
  Sent,
}

interface Entry {
  readonly message: AmqplibConsumeMessage;
  state: Settle;
}

/**
 * The acks of one consumer channel, sent in as few frames as possible. Delivery tags grow along the channel, and
 * `basic.ack` with `multiple` acks every delivery up to a tag: acks made in one turn of the event loop for
 * deliveries that arrived in a row go out as one frame instead of one each (a flood of short tasks otherwise spends
 * much of its time writing ack frames). An ack behind a delivery still open goes out on its own, at the same turn's
 * end, so a long task never holds back the acks of the short ones after it. Rejects and requeues go out at once.
 *
 * It must see every delivery the channel receives, in order (`received`), so that a `multiple` ack never covers a
 * delivery the application has not settled. `flush` before the channel closes, or the pending acks are lost (the
 * broker would deliver those messages again).
 */
export class AckCoalescer {
  readonly #channel: AmqplibChannel;
  readonly #entries = new Denque<Entry>();
  readonly #byTag = new Map<number, Entry>();
  #pending = 0;
  #scheduled = false;
  /** Settled when this turn's acks have been written; one promise shared by every ack of the turn. */
  #flushed: Promise<void> = Promise.resolve();
  #resolveFlushed: () => void = () => undefined;

  constructor(channel: AmqplibChannel) {
    this.#channel = channel;
  }

  /** A delivery arrived on the channel (in tag order). */
  received(message: AmqplibConsumeMessage): void {
    const entry: Entry = { message, state: Settle.Open };
    this.#entries.push(entry);
    this.#byTag.set(message.fields.deliveryTag, entry);
  }

  /**
   * Acks at the end of this turn of the event loop; the promise settles once the frame is handed to the connection
   * (or the channel is found gone, when the broker requeues the message anyway). Throws when the delivery is not open
   * on this channel.
   */
  ack(message: AmqplibConsumeMessage): Promise<void> {
    const entry = this.#open(message);
    entry.state = Settle.AckPending;
    this.#pending++;
    if (!this.#scheduled) {
      this.#scheduled = true;
      this.#flushed = new Promise((resolve) => {
        this.#resolveFlushed = resolve;
      });
      setImmediate(() => this.flush());
    }
    return this.#flushed;
  }

  /** Rejects now (with or without requeue). Throws when the delivery is not open on this channel. */
  reject(message: AmqplibConsumeMessage, requeue: boolean): void {
    const entry = this.#open(message);
    this.#channel.reject(message, requeue);
    entry.state = Settle.Sent;
    this.#byTag.delete(message.fields.deliveryTag);
  }

  /**
   * Sends every pending ack: the longest settled run at the front as one `multiple` ack ending at its last pending
   * delivery, the rest one by one. A channel that is gone requeues them anyway, so a failed write is not reported.
   */
  flush(): void {
    this.#scheduled = false;
    const resolveFlushed = this.#resolveFlushed;
    this.#resolveFlushed = () => undefined;
    try {
      this.#send();
    } finally {
      resolveFlushed();
    }
  }

  #send(): void {
    if (this.#pending === 0) return;
    try {
      let last: Entry | undefined;
      for (let head = this.#entries.peekFront(); head && head.state !== Settle.Open; head = this.#entries.peekFront()) {
        this.#entries.shift();
        this.#byTag.delete(head.message.fields.deliveryTag);
        if (head.state === Settle.AckPending) {
          last = head;
          this.#pending--;
        }
      }
      if (last) {
        this.#channel.ack(last.message, true);
        last.state = Settle.Sent;
      }
      if (this.#pending === 0) return;
      for (const entry of this.#byTag.values()) {
        if (entry.state !== Settle.AckPending) continue;
        this.#channel.ack(entry.message);
        entry.state = Settle.Sent;
        this.#byTag.delete(entry.message.fields.deliveryTag);
        this.#pending--;
      }
    } catch {
      // The channel closed under us: the broker requeues whatever was not acked.
      this.#pending = 0;
    }
  }

  #open(message: AmqplibConsumeMessage): Entry {
    const entry = this.#byTag.get(message.fields.deliveryTag);
    if (!entry || entry.message !== message || entry.state !== Settle.Open) {
      throw new Error(`delivery ${message.fields.deliveryTag} is not open on this channel`);
    }
    return entry;
  }
}
