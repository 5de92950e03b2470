// The suite's holes, closed: each bug below was once planted in a store that still passed. A store with leases
// (the memory store plus Redis-like leases, `LeasedMemoryStore`) carries one defect at a time, and the check meant
// for it must fail — while the same checks pass on the store without defects.
import { MemoryBroker } from '@kq/core';
import {
  checkCancelMidStreamKeepsMessagesFresh,
  checkCancelledConsumerTakesNothing,
  checkCrashRecovery,
  checkDeleteQueueDropsBindings,
  checkLeaseRenewedWhileHeld,
  checkNoAckDeliveriesAreNotLeased,
  checkPriorityAcrossQueues,
  checkStaleAckRefused,
  runCheck,
  type CheckFunction,
  type TransportSuiteOptions,
} from '@kq/test-harness';
import { describe, expect, it } from 'vitest';
import { LeasedMemoryTransport, type LeaseStoreDefects } from './leased-memory-store';

const LEASE_MS = 300;

function suiteFor(name: string, defects: LeaseStoreDefects): TransportSuiteOptions {
  // One broker per run: leases and queues of a run are its own, as on a fresh Redis.
  const broker = new MemoryBroker(`planted-${name}-${Math.random().toString(36).slice(2)}`);
  return {
    name,
    create: () => new LeasedMemoryTransport(broker, LEASE_MS, defects),
    createStalled: () => new LeasedMemoryTransport(broker, LEASE_MS, defects, false),
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
});
