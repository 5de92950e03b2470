import type { Delivery, OutgoingMessage } from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import type { Logger } from '../log/logger';
import type { TaskMessage } from '../protocol/index';
import type { WorkerState } from './worker-state';

/** Header kq counts redeliveries in, on transports that do not count them. */
export const REDELIVERIES_HEADER = 'kq_redeliveries';

/**
 * What a worker decides about a message it was given again: how often it was delivered before (so a task that keeps
 * killing its worker is stopped after `workerMaxRedeliveries`), and whether a run of it already succeeded (so a lost
 * ack does not make the work run again).
 */
export class RedeliveryGuard {
  readonly #app: AppContract;
  readonly #state: WorkerState;
  readonly #log: Logger;

  constructor(app: AppContract, state: WorkerState, log: Logger) {
    this.#app = app;
    this.#state = state;
    this.#log = log;
  }

  /**
   * How many times this message was delivered before. Brokers that count (quorum queues) say so; for the others a
   * redelivered message is republished once with the count in a header and the original acked. Answered without
   * waiting unless the message must be republished (`'republish'`, then see {@link republishCounted}).
   */
  deliveriesBefore(delivery: Delivery): number | 'republish' {
    const { deliveryInfo } = delivery;
    if (deliveryInfo.deliveryCount !== undefined) return deliveryInfo.deliveryCount;
    const counted = Number(delivery.headers[REDELIVERIES_HEADER] ?? 0) || 0;
    if (!deliveryInfo.redelivered) return counted;
    const seen = counted + 1;
    return seen >= this.#app.conf.workerMaxRedeliveries ? seen : 'republish';
  }

  /**
   * For a message delivered before, or to be republished with its count: null when it is dealt with here (acked
   * because a run already succeeded, or handed on as a counted copy), else how many deliveries came before this one.
   */
  async deliveriesOfRedelivered(delivery: Delivery, message: TaskMessage, counted: number | 'republish'): Promise<number | null> {
    if (delivery.deliveryInfo.redelivered && (await this.succeededBefore(message))) {
      // A run already succeeded (its ack was lost: a blocked event loop outlived the lease, a connection dropped
      // after the result was stored). Running it again would only repeat it, and failing it would contradict it.
      this.#log.warning(`Task ${message.name}[${message.id}] was redelivered but already succeeded; acknowledging it without running it again`);
      await delivery.ack().catch((error: unknown) => this.#log.warning(`could not ack: ${String(error)}`));
      return null;
    }
    return counted === 'republish' ? this.republishCounted(delivery) : counted;
  }

  /** Whether a run of this task already succeeded, here or as its stored result says (ask for redelivered messages only). */
  async succeededBefore(message: TaskMessage): Promise<boolean> {
    if (this.#state.succeeded.has(message.id)) return true;
    try {
      const backend = await this.#app.backend();
      return (await backend?.get(message.id))?.status === 'SUCCESS';
    } catch (error) {
      this.#log.warning(`Could not look up the result of redelivered task ${message.name}[${message.id}] (${String(error)}); running it`);
      return false;
    }
  }

  /** Hands a redelivered message on with its count raised and acks it; null once handed on, else the count. */
  async republishCounted(delivery: Delivery): Promise<number | null> {
    const { deliveryInfo } = delivery;
    // Its claim was already taken back (a blocked loop outlived the lease): the broker has given it out again, and
    // a counted copy on top would make two.
    if (delivery.stale) return null;
    const counted = Number(delivery.headers[REDELIVERIES_HEADER] ?? 0) || 0;
    try {
      const channel = await this.#app.connection.channel();
      await channel.publish(deliveryInfo.exchange, deliveryInfo.routingKey, republishable(delivery, { [REDELIVERIES_HEADER]: counted + 1 }));
    } catch (error) {
      this.#log.warning(`Could not count the redelivery of ${deliveryInfo.deliveryTag} (${String(error)}); running it as is`);
      return counted;
    }
    // The counted copy is out: this one must not also run here, whether or not its ack lands. If the ack fails (the
    // claim was taken back meanwhile), the broker holds the original again as well; a redelivered copy of a task
    // that already succeeded is then acknowledged without running (see succeededBefore).
    await delivery.ack().catch((error: unknown) => {
      this.#log.warning(`Handed ${deliveryInfo.deliveryTag} on as a counted copy, but the original's ack failed (${String(error)}); it will be redelivered`);
    });
    return null;
  }
}

/**
 * The message to publish again for a delivery (a counted copy, an ETA deferral): as received, minus the Redis
 * transport's `redelivered` header, which would make the fresh copy look redelivered.
 */
export function republishable(delivery: Delivery, extraHeaders: Record<string, unknown> = {}): OutgoingMessage {
  const { redelivered: _redelivered, ...headers } = delivery.headers;
  return {
    body: delivery.body,
    contentType: delivery.contentType,
    contentEncoding: delivery.contentEncoding,
    headers: { ...headers, ...extraHeaders },
    properties: delivery.properties,
  };
}
