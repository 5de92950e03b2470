import type { Delivery } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { bodyText, duplicatesOf, messageIds, seededRandom, shuffled } from '../test-messages';
import { quietPeriod, sleep } from '../wait-for';

/**
 * Tracks unsettled deliveries against the prefetch limit in force. While `setPrefetch` is in flight either limit
 * may apply; once it resolved, only the new one. A delivery that arrives while the consumer already holds
 * `limit` unsettled ones is a violation.
 */
class PrefetchMonitor {
  readonly unsettled = new Set<Delivery>();
  readonly received: string[] = [];
  readonly violations: string[] = [];
  readonly settleErrors: unknown[] = [];
  maxUnsettled = 0;
  #limit: number;
  #pendingLimit: number | undefined;
  /** In `auto` mode each delivery is acked after a short pseudo-random delay, as a worker under load would. */
  mode: 'hold' | 'auto' = 'hold';
  readonly #random = seededRandom(0x9e37);

  constructor(limit: number) {
    this.#limit = limit;
  }

  readonly onMessage = (delivery: Delivery): void => {
    const allowed = Math.max(this.#limit, this.#pendingLimit ?? 0);
    if (this.unsettled.size >= allowed) {
      this.violations.push(
        `${bodyText(delivery)} arrived while ${this.unsettled.size} deliveries were unsettled (prefetch ${allowed})`,
      );
    }
    this.unsettled.add(delivery);
    this.maxUnsettled = Math.max(this.maxUnsettled, this.unsettled.size);
    this.received.push(bodyText(delivery));
    if (this.mode === 'auto') {
      setTimeout(() => void this.ack(delivery), Math.floor(this.#random() * 4));
    }
  };

  /** Fails with the first violation spelled out (the full list can be long). */
  assertWithinLimit(what: string): void {
    if (this.violations.length > 0) {
      throw new Error(`${what}: prefetch exceeded ${this.violations.length} time(s); first: ${this.violations[0]}`);
    }
  }

  async changeLimit(limit: number, apply: () => Promise<void>): Promise<void> {
    this.#pendingLimit = limit;
    await apply();
    this.#limit = limit;
    this.#pendingLimit = undefined;
  }

  /** Counts the delivery as settled before the round trip: the broker may refill as soon as the ack is sent. */
  async ack(delivery: Delivery): Promise<void> {
    this.unsettled.delete(delivery);
    await delivery.ack().catch((error: unknown) => this.settleErrors.push(error));
  }

  async ackOldest(count: number): Promise<void> {
    for (const delivery of [...this.unsettled].slice(0, count)) await this.ack(delivery);
  }
}

/**
 * Prefetch is never exceeded, reached when messages are waiting, and follows `setPrefetch` both ways; then under
 * load with acks in random order, nothing is lost or duplicated.
 */
export async function checkPrefetchNeverExceeded(context: ConformanceContext): Promise<void> {
  const total = 150;
  const queue = await context.declareQueue('q');
  const ids = messageIds('m', total);
  await context.publishIds(await context.channel(), '', queue, ids);
  await context.waitForDepth(queue, total);
  const monitor = new PrefetchMonitor(5);
  const consumer = await (await context.channel()).consume({ queues: [queue], prefetch: 5, onMessage: monitor.onMessage });
  expect(consumer.prefetch).toBe(5);
  const holding = async (count: number, what: string): Promise<void> => {
    await context.waitFor(() => monitor.unsettled.size >= count, () => `${what}: ${count} unsettled deliveries; ${monitor.unsettled.size} arrived`);
    await quietPeriod(context.ms(100));
    monitor.assertWithinLimit(what);
    expect(monitor.unsettled.size, what).toBe(count);
  };

  await holding(5, 'prefetch 5 filled');
  const unacked = context.setup.probe?.unackedCount;
  if (unacked) await context.waitFor(async () => (await unacked(queue)) === 5, `the broker to count 5 unacked in ${queue}`);
  await monitor.ackOldest(2);
  await holding(5, 'prefetch 5 refilled after 2 acks');

  await monitor.changeLimit(2, () => consumer.setPrefetch(2));
  expect(consumer.prefetch).toBe(2);
  await monitor.ackOldest(4);
  await holding(2, 'prefetch lowered to 2');

  await monitor.changeLimit(8, () => consumer.setPrefetch(8));
  await holding(8, 'prefetch raised to 8');

  monitor.mode = 'auto';
  const random = seededRandom(0x51ed);
  // Ack what is held in a scrambled order, with small pauses, while new deliveries keep arriving.
  for (const delivery of shuffled([...monitor.unsettled], random)) {
    await monitor.ack(delivery);
    await sleep(1);
  }
  await context.waitFor(
    () => monitor.received.length >= total,
    () => `all ${total} messages under load; ${monitor.received.length} arrived`,
    15_000,
  );
  await context.waitFor(() => monitor.unsettled.size === 0, 'the last acks');
  await quietPeriod(context.ms(100));
  monitor.assertWithinLimit('under load');
  expect(monitor.settleErrors).toEqual([]);
  expect(monitor.maxUnsettled).toBeLessThanOrEqual(8);
  expect(duplicatesOf(monitor.received), 'messages delivered twice').toEqual([]);
  expect([...monitor.received].sort()).toEqual([...ids].sort());
  await context.waitForDepth(queue, 0);
}

/** Several consumers on one channel each keep to their own prefetch. */
export async function checkPrefetchPerConsumer(context: ConformanceContext): Promise<void> {
  const first = await context.declareQueue('first');
  const second = await context.declareQueue('second');
  const publisher = await context.channel();
  await context.publishIds(publisher, '', first, messageIds('a', 10));
  await context.publishIds(publisher, '', second, messageIds('b', 10));
  await context.waitForDepth(first, 10);
  await context.waitForDepth(second, 10);
  const channel = await context.channel();
  const one = new PrefetchMonitor(2);
  const two = new PrefetchMonitor(3);
  await channel.consume({ queues: [first], prefetch: 2, onMessage: one.onMessage });
  await channel.consume({ queues: [second], prefetch: 3, onMessage: two.onMessage });
  await context.waitFor(() => one.unsettled.size >= 2 && two.unsettled.size >= 3, 'both consumers to fill their prefetch');
  await quietPeriod(context.ms(100));
  one.assertWithinLimit('consumer with prefetch 2');
  two.assertWithinLimit('consumer with prefetch 3');
  expect([one.unsettled.size, two.unsettled.size]).toEqual([2, 3]);
}

export const prefetchGroup: ConformanceGroup = {
  name: 'prefetch',
  checks: [
    { name: 'prefetch is never exceeded, is reached, and follows setPrefetch, under load', run: checkPrefetchNeverExceeded, timeoutMs: 45_000 },
    { name: 'each consumer on a channel keeps to its own prefetch', run: checkPrefetchPerConsumer },
  ],
};
