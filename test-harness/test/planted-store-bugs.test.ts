// The suite's holes, closed: each bug below was once planted in a store that still passed. A store with leases
// (the memory store plus Redis-like leases, `LeasedMemoryStore`) carries one defect at a time, and the check meant
// for it must fail — while the same checks pass on the store without defects.
import { MemoryBroker } from '@kq/core';
import {
  checkAckedStaysGonePastLeases,
  checkCancelMidStreamKeepsMessagesFresh,
  checkCancelledConsumerTakesNothing,
  checkCrashRecovery,
  checkDelayUpperBound,
  checkDeleteQueueDropsBindings,
  checkFanoutEmptyRoutingKey,
  checkHeadersTwoBindingsOneQueue,
  checkLeaseRenewedWhileHeld,
  checkNoAckDeliveriesAreNotLeased,
  checkPriorityAcrossQueues,
  checkPurgeEveryStep,
  checkQueueCountsEveryStep,
  checkRequeuedRoutineStaysBehindUrgent,
  checkRequeuePosition,
  checkStaleAckRefused,
  runCheck,
  type CheckFunction,
  type TransportSuiteOptions,
} from '@kq/test-harness';
import { describe, expect, it } from 'vitest';
import { LeasedMemoryTransport, type LeaseStoreDefects } from './leased-memory-store';
import { LiveFanoutMemoryTransport } from './live-fanout-memory-store';

const LEASE_MS = 300;

function suiteFor(name: string, defects: LeaseStoreDefects): TransportSuiteOptions {
  // One broker per run: leases and queues of a run are its own, as on a fresh Redis.
  const broker = new MemoryBroker(`planted-${name}-${Math.random().toString(36).slice(2)}`);
  return {
    name,
    create: () => new LeasedMemoryTransport(broker, LEASE_MS, defects),
    createStalled: () => new LeasedMemoryTransport(broker, LEASE_MS, defects, false),
    createWithPollInterval: (pollIntervalMs) => new LeasedMemoryTransport(broker, LEASE_MS, defects, true, pollIntervalMs),
    // The truth, read past the store: what its queues hold.
    probe: { queueDepth: async (queue) => broker.size(queue) },
    crash: (transport) => {
      if (!(transport instanceof LeasedMemoryTransport)) throw new TypeError('expected a LeasedMemoryTransport');
      transport.leaseStore.crash();
    },
    leaseMs: LEASE_MS,
    recoveryTimeoutMs: LEASE_MS * 4,
    timeoutScale: 0.5,
  };
}

const checks: ReadonlyArray<readonly [CheckFunction, keyof LeaseStoreDefects, RegExp]> = [
  [checkStaleAckRefused, 'settlesStaleClaims', /promise resolved .* instead of rejecting/],
  [checkLeaseRenewedWhileHeld, 'neverRenews', /kept past the lease went to another process/],
  [checkNoAckDeliveriesAreNotLeased, 'leasesNoAckClaims', /noAck deliveries came back/],
  [checkDeleteQueueDropsBindings, 'keepsBindingsOfDeletedQueues', /bound should hold \[\] but holds \[after-delete/],
  [checkPriorityAcrossQueues, 'prioritisesFirstQueueOnly', /most urgent message of all/],
  [checkCancelMidStreamKeepsMessagesFresh, 'alwaysMarksRedelivered', /never received, marked redelivered/],
  [checkCancelledConsumerTakesNothing, 'ignoresAbort', /the cancel of a consumer waiting on an empty queue/],
  [checkRequeuePosition, 'requeuesToHead', /order after requeueing a, declared requeuePosition: tail/],
  [checkRequeuedRoutineStaysBehindUrgent, 'restoresIntoDefaultStep', /a requeued priority-9 message and a priority-0 one/],
  [checkPurgeEveryStep, 'purgesDefaultStepOnly', /messages purgeQueue reports, with messages at every priority step/],
  [checkQueueCountsEveryStep, 'countsDefaultStepOnly', /checkQueue\(.*\) to count the \d+ ready message\(s\)/],
  [checkAckedStaysGonePastLeases, 'ackLeavesLease', /acked messages came back after their lease ran out/],
  [checkHeadersTwoBindingsOneQueue, 'keysBindingsWithoutArguments', /should hold \[pdf, log, both\] but holds/],
  [checkDelayUpperBound, 'delaysLate', /due after \d+ ms, tolerance \d+ ms/],
];

describe('the conformance suite catches planted store bugs', () => {
  it('controls: every check below passes on the lease store without defects (and crash recovery works on it)', async () => {
    for (const check of [...checks.map(([check]) => check), checkCrashRecovery]) {
      await runCheck(check, suiteFor(`control-${check.name}`, {}));
    }
  }, 60_000);

  it.each(checks)('%o fails on a store whose defect is %s', async (check, defect, pattern) => {
    await expect(runCheck(check, suiteFor(`${check.name}-${defect}`, { [defect]: true }))).rejects.toThrow(pattern);
  }, 30_000);

  it('the cancel check waits in a long poll: a claim ignoring the cancel is caught behind a short poll too', async () => {
    // The shipped suites poll every 200-250 ms, well inside the old 1 s bound; createWithPollInterval gives the long poll.
    const shortPoll = (defects: LeaseStoreDefects, withHook: boolean): TransportSuiteOptions => {
      const broker = new MemoryBroker(`planted-short-poll-${Math.random().toString(36).slice(2)}`);
      const { createWithPollInterval: _replaced, ...options } = suiteFor('short-poll', defects);
      return {
        ...options,
        create: () => new LeasedMemoryTransport(broker, LEASE_MS, defects, true, 200),
        ...(withHook ? { createWithPollInterval: (ms: number) => new LeasedMemoryTransport(broker, LEASE_MS, defects, true, ms) } : {}),
      };
    };
    await runCheck(checkCancelledConsumerTakesNothing, shortPoll({}, true));
    await expect(runCheck(checkCancelledConsumerTakesNothing, shortPoll({ ignoresAbort: true }, true))).rejects.toThrow(
      /the cancel of a consumer waiting on an empty queue/,
    );
    // Without the hook the check cannot tell, and says so instead of passing.
    await expect(runCheck(checkCancelledConsumerTakesNothing, shortPoll({}, false))).rejects.toThrow(/polling every 200 ms.*createWithPollInterval/);
  }, 30_000);

  it('a lease store without createStalled fails the fencing check, saying what to give, instead of skipping it', async () => {
    const { createStalled: _omitted, ...withoutStalled } = suiteFor('no-stalled', { settlesStaleClaims: true });
    await expect(runCheck(checkStaleAckRefused, withoutStalled)).rejects.toThrow(/leaseMs is set but createStalled is not/);
  });

  it('a transport that does not declare requeuePosition fails the requeue-position check', async () => {
    const options = suiteFor('undeclared', {});
    const capabilities = { ...new LeasedMemoryTransport(new MemoryBroker('capabilities-only'), LEASE_MS).capabilities };
    delete (capabilities as { requeuePosition?: unknown }).requeuePosition;
    await expect(runCheck(checkRequeuePosition, { ...options, capabilities })).rejects.toThrow(/does not declare capabilities.requeuePosition/);
  });

  it('live fanout: a subscriber hearing an empty routing key twice fails the empty-key fanout check', async () => {
    const live = (hearsEmptyKeyTwice: boolean): TransportSuiteOptions => {
      const broker = new MemoryBroker(`planted-live-fanout-${Math.random().toString(36).slice(2)}`);
      return { name: 'live-fanout', create: () => new LiveFanoutMemoryTransport(broker, { hearsEmptyKeyTwice }), timeoutScale: 0.5 };
    };
    await runCheck(checkFanoutEmptyRoutingKey, live(false));
    await expect(runCheck(checkFanoutEmptyRoutingKey, live(true))).rejects.toThrow(/copies received from .*plain/);
  });
});
