import { describe, expect, it } from 'vitest';
import {
  checkAgainstModel,
  checkChannelCloseRedelivers,
  checkCompetingConsumers,
  checkFifoAfterRequeue,
  checkFifoByConsume,
  checkFifoByGet,
  checkPrefetchNeverExceeded,
  checkPrefetchPerConsumer,
  checkRequeueRedelivers,
  runCheck,
  type CheckFunction,
  type TransportSuiteOptions,
} from '@kq/test-harness';
import {
  SabotagedTransport,
  dropsEveryHundredth,
  duplicatesAMessage,
  ignoresPrefetch,
  neverSetsRedelivered,
  noSabotage,
  type Sabotage,
} from './broken-transports';

// Short waits: the memory transport answers at once, and a broken one should be caught quickly.
function suiteFor(name: string, sabotage: Sabotage): TransportSuiteOptions {
  return { name, create: () => new SabotagedTransport(sabotage), timeoutScale: 0.3, modelRuns: 25 };
}

async function expectCaught(check: CheckFunction, sabotage: Sabotage, pattern?: RegExp): Promise<void> {
  const outcome = runCheck(check, suiteFor(check.name, sabotage));
  if (pattern) await expect(outcome).rejects.toThrow(pattern);
  else await expect(outcome).rejects.toThrow();
}

describe('the conformance suite catches broken transports', () => {
  it('controls: the checks used below pass through the sabotage wrapper when it changes nothing', async () => {
    for (const check of [
      checkFifoByGet,
      checkFifoByConsume,
      checkFifoAfterRequeue,
      checkCompetingConsumers,
      checkPrefetchNeverExceeded,
      checkPrefetchPerConsumer,
      checkRequeueRedelivers,
      checkChannelCloseRedelivers,
      checkAgainstModel,
    ]) {
      await runCheck(check, suiteFor(`control ${check.name}`, noSabotage));
    }
  }, 60_000);

  it('a transport that drops every 100th message fails FIFO, competing consumers and prefetch-under-load', async () => {
    await expectCaught(checkFifoByGet, dropsEveryHundredth, /to hold 100 ready message\(s\); it holds 99/);
    await expectCaught(checkCompetingConsumers, dropsEveryHundredth, /300 deliveries across 3 consumers/);
    await expectCaught(checkPrefetchNeverExceeded, dropsEveryHundredth);
  }, 60_000);

  it('a transport that ignores prefetch fails the prefetch checks', async () => {
    await expectCaught(checkPrefetchNeverExceeded, ignoresPrefetch, /arrived while \d+ deliveries were unsettled \(prefetch 5\)/);
    await expectCaught(checkPrefetchPerConsumer, ignoresPrefetch);
  }, 60_000);

  it('a transport that never sets redelivered fails requeue, channel-close, ordering and model checks', async () => {
    await expectCaught(checkRequeueRedelivers, neverSetsRedelivered);
    await expectCaught(checkChannelCloseRedelivers, neverSetsRedelivered, /redelivered/);
    await expectCaught(checkFifoAfterRequeue, neverSetsRedelivered);
    await expectCaught(checkAgainstModel, neverSetsRedelivered, /redelivered=false, expected true/);
  }, 60_000);

  it('a transport that duplicates a message fails FIFO, competing consumers and the model', async () => {
    await expectCaught(checkFifoByConsume, duplicatesAMessage);
    await expectCaught(checkCompetingConsumers, duplicatesAMessage, /more than one consumer, or twice/);
    await expectCaught(checkAgainstModel, duplicatesAMessage, /model/);
  }, 60_000);
});
