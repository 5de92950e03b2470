/*
 * A multi-queue consumer's round-robin bookkeeping: per queue, when it last delivered and was settled, and whether its
 * next delivery is worth waiting for, so every busy queue has a delivery at hand when its turn comes.
 */

/** One queue's subscription on the consumer's channel. */
export interface Subscription {
  readonly queue: string;
  /** The broker consumer tag this queue's subscriptions derive from. */
  readonly baseTag: string;
  /** The broker consumer tag in use (changes when a prefetch change re-subscribes). */
  tag: string;
  resubscriptions: number;
  /** `active` on the live channel; `idle` waiting for a channel; `cancelled` by the broker, waiting for the queue. */
  state: 'active' | 'idle' | 'cancelled';
  /** When its last delivery arrived (or it subscribed), for the round-robin refill wait. */
  lastArrival: number;
  /** Deliveries of this queue settled since its last arrival: the broker may be sending the next one. */
  settledSinceArrival: number;
  /** When a delivery of this queue was last settled. */
  lastSettle: number;
  /** Until when its next delivery is expected (it delivered recently, or the broker said it has more). */
  expectUntil: number;
  /** Refill waits for it that ran out since its last delivery. */
  refillChecks: number;
  /** The broker said its queue has nothing ready: no more waiting for it until it delivers again. */
  presumedEmpty: boolean;
}

/**
 * Bounds of how long a multi-queue consumer waits for a queue's next delivery to keep the round-robin turn (see
 * `#refillWait`): three times the observed settle-to-next-delivery time, within these bounds.
 */
const REFILL_WAIT_MIN_MS = 10;
const REFILL_WAIT_MAX_MS = 50;
/** A queue that delivered within this long is expected to deliver again once its messages are settled. */
const REFILL_EXPECT_MS = 100;
/** Refill waits that ran out (each followed by asking the broker for the queue's depth) before a queue is skipped. */
const MAX_REFILL_CHECKS = 3;

/** A fresh subscription is expected to deliver at once (if its queue has messages): it gets its turn. */
export function expectFirstDelivery(subscription: Subscription, now: number = Date.now()): void {
  subscription.lastArrival = now;
  subscription.expectUntil = now + REFILL_EXPECT_MS;
  subscription.settledSinceArrival = 1;
  subscription.refillChecks = 0;
  subscription.presumedEmpty = false;
}

/** Records a delivery of the queue; returns a settle-to-next-delivery sample (ms) when it makes one. */
export function noteArrival(subscription: Subscription, now: number): number | undefined {
  const sample = subscription.settledSinceArrival > 0 && subscription.lastSettle > 0 ? Math.min(REFILL_WAIT_MAX_MS, now - subscription.lastSettle) : undefined;
  subscription.lastArrival = now;
  subscription.expectUntil = now + REFILL_EXPECT_MS;
  subscription.settledSinceArrival = 0;
  subscription.refillChecks = 0;
  subscription.presumedEmpty = false;
  return sample;
}

/**
 * Round-robin across queues needs a delivery of every busy queue at hand when its turn comes. A handler that
 * settles at once empties the local supply in a moment, and then the queues' next deliveries come back over
 * the network in bursts, in no fixed order. So when a queue that delivered recently and has had deliveries
 * settled since has nothing waiting, the others wait for its next one — three times the usual settle-to-delivery
 * time, 10 to 50 ms. When such a wait runs out the broker is asked for the queue's depth: a queue with nothing
 * ready is skipped until it delivers again (an idle queue costs one short wait and one passive declare); one
 * with messages ready is waited for again, up to `MAX_REFILL_CHECKS` times (other consumers may be taking them).
 */
export function refillWaitMs(latency: number): number {
  return Math.min(REFILL_WAIT_MAX_MS, Math.max(REFILL_WAIT_MIN_MS, Math.ceil(3 * latency)));
}

/** The active queues whose next delivery is expected and not at hand. */
export function awaitedSubscriptions(subscriptions: readonly Subscription[], atHand: (subscription: Subscription) => boolean, now: number): Subscription[] {
  return subscriptions.filter(
    (subscription) =>
      subscription.state === 'active' && !subscription.presumedEmpty && subscription.settledSinceArrival > 0 && now < subscription.expectUntil && !atHand(subscription),
  );
}

/** After a refill wait ran out: a queue the broker says is empty, or waited for enough, is skipped until it delivers. */
export async function checkAwaited(missing: readonly Subscription[], queueDepth: (queue: string) => Promise<number | undefined>): Promise<void> {
  for (const subscription of missing) {
    subscription.refillChecks += 1;
    let ready: number | undefined = 0;
    if (subscription.refillChecks < MAX_REFILL_CHECKS) ready = await queueDepth(subscription.queue).catch(() => 0);
    if (ready === undefined || ready === 0 || subscription.refillChecks >= MAX_REFILL_CHECKS) subscription.presumedEmpty = true;
    else subscription.expectUntil = Date.now() + REFILL_EXPECT_MS;
  }
}
