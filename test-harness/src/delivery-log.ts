import type { Channel, ConsumerHandle, Delivery } from '@kq/core';
import type { ConformanceContext } from './conformance-context';
import { bodyText } from './test-messages';

/** What a recording consumer does with each delivery as it arrives. */
export type ArrivalPolicy = 'ack' | 'hold' | ((delivery: Delivery, log: DeliveryLog) => void);

/**
 * Records what a consumer receives, in arrival order, and settles it by policy: `ack` at once, `hold` for the test
 * to settle, or a custom function. Settle failures are collected instead of becoming unhandled rejections.
 */
export class DeliveryLog {
  readonly deliveries: Delivery[] = [];
  readonly settleErrors: unknown[] = [];
  /** Deliveries received and not yet settled through this log. */
  readonly held = new Set<Delivery>();
  policy: ArrivalPolicy;

  constructor(policy: ArrivalPolicy = 'ack') {
    this.policy = policy;
  }

  readonly onMessage = (delivery: Delivery): void => {
    this.deliveries.push(delivery);
    if (delivery.noAck) {
      // nothing to settle
    } else if (this.policy === 'ack') {
      this.settle(delivery, 'ack');
    } else {
      this.held.add(delivery);
      if (typeof this.policy === 'function') this.policy(delivery, this);
    }
  };

  get ids(): string[] {
    return this.deliveries.map(bodyText);
  }

  get count(): number {
    return this.deliveries.length;
  }

  /** Settles a delivery now; the log stops counting it as held before the round trip, as the broker does. */
  settle(delivery: Delivery, action: 'ack' | 'requeue' | 'reject'): Promise<void> {
    this.held.delete(delivery);
    const done = action === 'ack' ? delivery.ack() : action === 'requeue' ? delivery.requeue() : delivery.reject();
    return done.catch((error: unknown) => {
      this.settleErrors.push(error);
    });
  }

  /** Settles everything held. */
  async settleHeld(action: 'ack' | 'requeue' | 'reject' = 'ack'): Promise<void> {
    await Promise.all([...this.held].map((delivery) => this.settle(delivery, action)));
  }

  async waitForCount(context: ConformanceContext, count: number, baseMs?: number): Promise<void> {
    await context.waitFor(
      () => this.deliveries.length >= count,
      () => `${count} deliveries; ${this.deliveries.length} arrived`,
      baseMs,
    );
  }

  /** Fails when a settle call failed (a transport refusing a valid ack is a bug). */
  assertNoSettleErrors(): void {
    if (this.settleErrors.length > 0) {
      const first = this.settleErrors[0];
      throw new Error(
        `${this.settleErrors.length} settle call(s) failed; first: ${first instanceof Error ? `${first.name}: ${first.message}` : String(first)}`,
      );
    }
  }
}

/** Starts a consumer of `queues` on `channel` that records into a new `DeliveryLog`. */
export async function recordingConsumer(
  channel: Channel,
  queues: readonly string[],
  options: { prefetch?: number; policy?: ArrivalPolicy; noAck?: boolean } = {},
): Promise<{ log: DeliveryLog; consumer: ConsumerHandle }> {
  const log = new DeliveryLog(options.policy ?? 'ack');
  const consumer = await channel.consume({
    queues,
    onMessage: log.onMessage,
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    ...(options.noAck === undefined ? {} : { noAck: options.noAck }),
  });
  return { log, consumer };
}
