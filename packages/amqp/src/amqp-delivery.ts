import { BaseDelivery, type DeliveryInit } from '@kq/core';

export type SettleAction = 'ack' | 'reject' | 'requeue';

/** Settles deliveries for the consumer (or getter) that owns their channel; `origin` says which delivery. */
export interface DeliverySettler<O> {
  settle(origin: O, action: SettleAction): Promise<void>;
  /** False once the channel that delivered it is gone (the broker requeued it). */
  holds(origin: O): boolean;
}

/**
 * A delivery from an AMQP channel; settling goes back to the consumer (or getter) that owns the channel. It holds
 * its owner's settler and its own origin record rather than a closure over them: a consumer makes one per message.
 */
export class AmqpDelivery<O> extends BaseDelivery {
  readonly #settler: DeliverySettler<O>;
  readonly #origin: O;

  constructor(init: DeliveryInit, settler: DeliverySettler<O>, origin: O) {
    super(init);
    this.#settler = settler;
    this.#origin = origin;
  }

  /** RabbitMQ keeps no reason with a reject (its `x-death` says `rejected`); the worker logs it. */
  protected settle(action: SettleAction): Promise<void> {
    return this.#settler.settle(this.#origin, action);
  }

  protected override isStale(): boolean {
    return !this.#settler.holds(this.#origin);
  }
}
