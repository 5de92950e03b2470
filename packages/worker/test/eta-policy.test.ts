import { describe, expect, it } from 'vitest';
import { deferDelayMs, defersToBroker, etaStrategyOf, needsBrokerDelayRoutes, pendingEta, sendDelayMs } from '../src/runtime/eta';

// The ETA policy in one table; the end-to-end behaviour is in scheduling, send-tasks and eta-* tests.
describe('ETA policy', () => {
  const now = Date.UTC(2026, 0, 1);
  const inFive = new Date(now + 5000);
  const past = new Date(now - 1);

  it('on send, only the broker strategy delays, and only a future ETA', () => {
    expect(sendDelayMs(inFive, 'broker', now)).toBe(5000);
    expect(sendDelayMs(inFive, 'worker', now)).toBe(0);
    expect(sendDelayMs(inFive, null, now)).toBe(0);
    expect(sendDelayMs(past, 'broker', now)).toBe(0);
    expect(sendDelayMs(null, 'broker', now)).toBe(0);
  });

  it('on receipt, a future ETA is deferred under broker and held under worker (the default); a past one runs', () => {
    expect(etaStrategyOf({ etaStrategy: null })).toBe('worker');
    expect(pendingEta(inFive, now)).toBe(inFive);
    expect(pendingEta(past, now)).toBeNull();
    expect(pendingEta(null, now)).toBeNull();
    expect([defersToBroker('broker'), defersToBroker('worker')]).toEqual([true, false]);
    expect(deferDelayMs(inFive, now)).toBe(5000);
    expect(deferDelayMs(new Date(now), now)).toBe(1);
  });

  it('a worker routes the delay ladder under broker, or for quorum queues', () => {
    expect(needsBrokerDelayRoutes('broker', [])).toBe(true);
    expect(needsBrokerDelayRoutes('worker', [{ queueType: 'classic' }])).toBe(false);
    expect(needsBrokerDelayRoutes('worker', [{ queueType: 'classic' }, { queueType: 'quorum' }])).toBe(true);
  });
});
