import { BaseDelivery, type DeliveryInit } from '@kq/core';

export type SettleAction = 'ack' | 'reject' | 'requeue';

/** A delivery from an AMQP channel; settling goes back to the consumer (or getter) that owns the channel. */
export class AmqpDelivery extends BaseDelivery {
  readonly #onSettle: (action: SettleAction) => Promise<void>;

  constructor(init: DeliveryInit, onSettle: (action: SettleAction) => Promise<void>) {
    super(init);
    this.#onSettle = onSettle;
  }

  protected settle(action: SettleAction): Promise<void> {
    return this.#onSettle(action);
  }
}
