import { BaseDelivery, type DeliveryInit } from '../message';

type SettleAction = 'ack' | 'reject' | 'requeue';

/** A delivery from a `VirtualChannel`; settling goes back to the channel, which owns the store's claim. */
export class VirtualDelivery extends BaseDelivery {
  readonly #onSettle: (action: SettleAction) => Promise<void>;

  constructor(init: DeliveryInit, onSettle: (action: SettleAction) => Promise<void>) {
    super(init);
    this.#onSettle = onSettle;
  }

  protected settle(action: SettleAction): Promise<void> {
    return this.#onSettle(action);
  }
}
