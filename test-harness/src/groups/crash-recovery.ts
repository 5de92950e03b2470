import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { startPeerConsumer } from '../peer';
import { bodyText, duplicatesOf, messageIds } from '../test-messages';
import { quietPeriod } from '../wait-for';

/**
 * A process holding unacked deliveries crashes (the suite's `crash` hook): another process receives everything —
 * what was still queued at once, what the dead one held within `recoveryTimeoutMs`, marked redelivered.
 */
export async function checkCrashRecovery(context: ConformanceContext): Promise<void> {
  const crash = context.setup.crash;
  if (!crash) throw new Error('checkCrashRecovery needs the crash() option');
  const queue = await context.declareQueue('q');
  const ids = messageIds('m', 10);
  await context.publishIds(await context.channel(), '', queue, ids);
  await context.waitForDepth(queue, ids.length);
  const doomed = await context.openTransport();
  const { log: lost } = await recordingConsumer(await context.channel(doomed), [queue], { prefetch: 4, policy: 'hold' });
  await lost.waitForCount(context, 4);
  const held = lost.ids;
  context.markCrashed(doomed);
  await crash(doomed);
  const { log } = await recordingConsumer(await context.channel(await context.openTransport()), [queue], { prefetch: 10 });
  await log.waitForCount(context, ids.length, context.setup.recoveryTimeoutMs);
  await quietPeriod(context.ms(200));
  log.assertNoSettleErrors();
  expect(duplicatesOf(log.ids), 'messages delivered twice after recovery').toEqual([]);
  expect([...log.ids].sort()).toEqual([...ids].sort());
  const redelivered = log.deliveries.filter((delivery) => delivery.deliveryInfo.redelivered).map(bodyText);
  expect(redelivered.sort(), 'recovered messages marked redelivered').toEqual([...held].sort());
}

/**
 * A consumer in another OS process (the suite's `peerModule`) holds deliveries and is killed with SIGKILL: this
 * process receives every message — the peer's within `recoveryTimeoutMs`, marked redelivered — and none twice.
 */
export async function checkCrashOfAnotherProcess(context: ConformanceContext): Promise<void> {
  const module = context.setup.peerModule;
  if (!module) throw new Error('checkCrashOfAnotherProcess needs the peerModule option');
  const queue = await context.declareQueue('peer');
  const ids = messageIds('p', 10);
  const peer = await startPeerConsumer({ module, env: context.setup.peerEnv, queue, prefetch: 4, readyTimeoutMs: context.ms(20_000) });
  try {
    await context.publishIds(await context.channel(), '', queue, ids);
    await context.waitFor(() => peer.held.length >= 4, () => `the peer process to hold 4 deliveries; it holds ${peer.held.length} (${peer.errors().trim()})`);
  } finally {
    await peer.kill();
  }
  const held = [...peer.held];
  const { log } = await recordingConsumer(await context.channel(await context.openTransport()), [queue], { prefetch: 10 });
  await log.waitForCount(context, ids.length, context.setup.recoveryTimeoutMs);
  await quietPeriod(context.ms(200));
  log.assertNoSettleErrors();
  expect(duplicatesOf(log.ids), 'messages delivered twice after the peer died').toEqual([]);
  expect([...log.ids].sort()).toEqual([...ids].sort());
  const redelivered = log.deliveries.filter((delivery) => delivery.deliveryInfo.redelivered).map(bodyText);
  expect(redelivered.sort(), 'what the killed process held comes back marked redelivered').toEqual([...held].sort());
}

export const crashRecoveryGroup: ConformanceGroup = {
  name: 'crash recovery',
  skipReason: (setup) => (setup.capabilities.crashRecovery ? undefined : 'transport reports crashRecovery: false'),
  checks: [
    {
      name: 'deliveries held by a crashed process come back to another one, redelivered',
      run: checkCrashRecovery,
      skipReason: (setup) => (setup.crash ? undefined : 'no crash() hook was given to defineTransportSuite'),
      timeoutMs: (setup) => setup.recoveryTimeoutMs + 30_000,
    },
    {
      name: 'deliveries held by another OS process killed with SIGKILL come back, redelivered, none twice',
      run: checkCrashOfAnotherProcess,
      skipReason: (setup) => (setup.peerModule ? undefined : 'no peerModule was given to defineTransportSuite'),
      timeoutMs: (setup) => setup.recoveryTimeoutMs + 60_000,
    },
  ],
};
