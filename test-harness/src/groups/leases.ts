import { StaleDeliveryError } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { bodyText, messageIds } from '../test-messages';
import { quietPeriod } from '../wait-for';

function leaseMs(context: ConformanceContext): number {
  const lease = context.setup.leaseMs;
  if (lease === undefined) throw new Error('the lease checks need the leaseMs option');
  return lease;
}

/**
 * A live consumer holding a delivery well past one lease keeps it: its heartbeat renews the lease, so a second
 * process consuming the same queue gets nothing, and the holder's ack goes through. (A store that never renews
 * hands the message to the other process after one lease: a task that runs longer than the lease runs twice.)
 */
export async function checkLeaseRenewedWhileHeld(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('renewed');
  await context.publishIds(await context.channel(), '', queue, ['held']);
  const { log: holder } = await recordingConsumer(await context.channel(await context.openTransport()), [queue], { prefetch: 1, policy: 'hold' });
  await holder.waitForCount(context, 1);
  const { log: other } = await recordingConsumer(await context.channel(await context.openTransport()), [queue], { prefetch: 1 });
  await quietPeriod(leaseMs(context) * 3);
  expect(other.ids, 'a delivery its live holder kept past the lease went to another process').toEqual([]);
  await holder.settleHeld('ack');
  await quietPeriod(context.ms(200));
  holder.assertNoSettleErrors();
  expect(other.ids).toEqual([]);
}

/**
 * A process frozen past its lease (no heartbeat) loses the delivery to another process, which gets it marked
 * redelivered; when the frozen one wakes and acks, the ack is refused with `StaleDeliveryError` and leaves the new
 * holder's claim alone: the message is settled once, by the process that now holds it.
 */
export async function checkStaleAckRefused(context: ConformanceContext): Promise<void> {
  const { createStalled } = context.setup;
  if (!createStalled) {
    // A skip here would let a store that settles claims it lost pass: a lease store must prove its fencing.
    throw new Error(
      'leaseMs is set but createStalled is not, so fencing goes unchecked: a store that accepts an ack from a claim ' +
        'that was taken back would pass. Give defineTransportSuite a createStalled() that makes a transport on the same ' +
        'broker whose leases are never renewed (e.g. a lease renewal interval far longer than the test).',
    );
  }
  const queue = await context.declareQueue('fenced');
  await context.publishIds(await context.channel(), '', queue, ['fenced']);
  const frozen = await context.openTransport(createStalled);
  context.markCrashed(frozen); // its channel's close tries to give back what it no longer holds: expected to fail
  const stale = await (await context.channel(frozen)).get(queue);
  expect(stale && bodyText(stale)).toBe('fenced');
  const { log: other } = await recordingConsumer(await context.channel(await context.openTransport()), [queue], { prefetch: 1, policy: 'hold' });
  await other.waitForCount(context, 1, leaseMs(context) * 2 + context.setup.recoveryTimeoutMs);
  expect(other.deliveries[0]?.deliveryInfo.redelivered, 'taken back from the frozen holder: redelivered').toBe(true);
  await expect(stale!.ack(), "the frozen holder's late ack").rejects.toBeInstanceOf(StaleDeliveryError);
  await other.settleHeld('ack');
  other.assertNoSettleErrors();
  await quietPeriod(leaseMs(context) * 2);
  expect(other.ids, 'settled once, by its new holder').toEqual(['fenced']);
  expect(await (await context.channel()).get(queue)).toBeNull();
}

/**
 * An acked message stays gone past the leases: with a second process consuming the queue for two lease periods (and
 * its sweeps running), nothing comes back, and the broker holds no unacked record of it. (A store whose ack forgets
 * the message but leaves its lease record, or Kombu's `unacked` entry, has it restored by the next sweep.)
 */
export async function checkAckedStaysGonePastLeases(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('acked');
  const ids = messageIds('a', 3);
  await context.publishIds(await context.channel(), '', queue, ids);
  const { log: holder } = await recordingConsumer(await context.channel(await context.openTransport()), [queue], { prefetch: 3 });
  await holder.waitForCount(context, ids.length);
  await quietPeriod(context.ms(100));
  holder.assertNoSettleErrors();
  const { log: other } = await recordingConsumer(await context.channel(await context.openTransport()), [queue], { prefetch: 3 });
  await quietPeriod(leaseMs(context) * 2 + context.ms(500));
  expect(other.ids, 'acked messages came back after their lease ran out').toEqual([]);
  const unacked = context.setup.probe?.unackedCount;
  if (unacked) expect(await unacked(queue), `unacked records left in ${queue} after every message was acked`).toBe(0);
  expect(await context.depth(queue)).toBe(0);
}

/**
 * Deliveries consumed with `noAck` are the consumer's the moment they arrive: nothing is leased, so when that
 * process crashes none of them comes back to anyone (a store that leases them delivers them twice).
 */
export async function checkNoAckDeliveriesAreNotLeased(context: ConformanceContext): Promise<void> {
  const crash = context.setup.crash;
  if (!crash) throw new Error('checkNoAckDeliveriesAreNotLeased needs the crash() option');
  const queue = await context.declareQueue('no-ack');
  const ids = messageIds('n', 5);
  await context.publishIds(await context.channel(), '', queue, ids);
  const doomed = await context.openTransport();
  const { log } = await recordingConsumer(await context.channel(doomed), [queue], { noAck: true, prefetch: 5 });
  await log.waitForCount(context, ids.length);
  context.markCrashed(doomed);
  await crash(doomed);
  const { log: other } = await recordingConsumer(await context.channel(await context.openTransport()), [queue]);
  await quietPeriod(context.setup.recoveryTimeoutMs);
  expect(other.ids, 'noAck deliveries came back after their consumer crashed').toEqual([]);
}

export const leasesGroup: ConformanceGroup = {
  name: 'leases',
  skipReason: (setup) => (setup.leaseMs === undefined ? 'no leaseMs was given to defineTransportSuite (the store keeps no leases)' : undefined),
  checks: [
    {
      name: 'a live holder keeps its delivery well past one lease (renewal)',
      run: checkLeaseRenewedWhileHeld,
      timeoutMs: (setup) => (setup.leaseMs ?? 0) * 3 + 30_000,
    },
    {
      name: "a frozen holder's late ack is refused once another process took the delivery back",
      run: checkStaleAckRefused,
      timeoutMs: (setup) => (setup.leaseMs ?? 0) * 4 + setup.recoveryTimeoutMs + 30_000,
    },
    {
      name: 'an acked message stays gone past two lease periods, and no unacked record of it is left',
      run: checkAckedStaysGonePastLeases,
      timeoutMs: (setup) => (setup.leaseMs ?? 0) * 2 + 30_000,
    },
    {
      name: 'noAck deliveries are not leased: none comes back after their consumer crashed',
      run: checkNoAckDeliveriesAreNotLeased,
      skipReason: (setup) => (setup.crash && setup.capabilities.crashRecovery ? undefined : 'needs the crash() hook and crashRecovery'),
      timeoutMs: (setup) => setup.recoveryTimeoutMs + 30_000,
    },
  ],
};
