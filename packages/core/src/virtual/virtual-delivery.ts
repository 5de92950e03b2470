import { BaseDelivery, type DeliveryInit } from '../message';
import type { Claim } from './virtual-store';

export type SettleAction = 'ack' | 'reject' | 'requeue';

/** The channel side of a virtual delivery: settles a claim, and knows whether it still holds it. */
export interface ClaimSettler<C> {
  /** `claim` is undefined for a delivery nothing stored (live fanout). */
  settle(claim: Claim | undefined, action: SettleAction, consumer: C | undefined, reason?: string): Promise<void>;
  holds(claim: Claim | undefined): boolean;
}

/**
 * A delivery from a `VirtualChannel`; settling goes back to the channel, which owns the store's claim. It holds the
 * channel's settler and its claim rather than a closure over them: a channel makes one per message.
 */
export class VirtualDelivery<C = unknown> extends BaseDelivery {
  readonly #settler: ClaimSettler<C>;
  readonly #claim: Claim | undefined;
  readonly #consumer: C | undefined;

  constructor(init: DeliveryInit, settler: ClaimSettler<C>, claim: Claim | undefined, consumer: C | undefined) {
    super(init);
    this.#settler = settler;
    this.#claim = claim;
    this.#consumer = consumer;
  }

  protected settle(action: SettleAction, reason?: string): Promise<void> {
    return this.#settler.settle(this.#claim, action, this.#consumer, reason);
  }

  protected override isStale(): boolean {
    return !this.#settler.holds(this.#claim);
  }
}
