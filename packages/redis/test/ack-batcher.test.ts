// AckBatcher: acks wait for a claim call to carry them while a consumer waits in BRPOP, and go on their own otherwise.
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { AckBatcher, type AckTarget, type PendingAck } from '../src/ack-batcher';

function batcherWith(linger: () => number) {
  const sent: string[][] = [];
  const batcher = new AckBatcher<AckTarget>(
    async (acks: ReadonlyArray<PendingAck<AckTarget>>) => {
      sent.push(acks.map((ack) => ack.tag));
      for (const ack of acks) ack.settle(true);
    },
    {
      staleError: (target) => new Error(`stale ${target.tag}`),
      done: () => undefined,
      retryable: () => false,
      holding: () => undefined,
      lingerMs: linger,
    },
  );
  return { batcher, sent };
}

describe('AckBatcher', () => {
  it('sends acks on their own two turns later when no consumer waits', async () => {
    const { batcher, sent } = batcherWith(() => 0);
    const acked = batcher.add({ tag: 'a', score: '1' });
    expect(sent).toEqual([]);
    await acked;
    expect(sent).toEqual([['a']]);
  });

  it('keeps an ack made just before its consumer went back to waiting for the claim that wakes it', async () => {
    // A round trip: the ack is made while nobody waits; the consumer starts its BRPOP in the same turn.
    let waiting = 0;
    const { batcher, sent } = batcherWith(() => (waiting > 0 ? 50 : 0));
    const acked = batcher.add({ tag: 'a', score: '1' });
    waiting = 1;
    await nextTurn();
    await nextTurn();
    await nextTurn();
    expect(sent).toEqual([]); // still waiting for a claim call
    const carried = batcher.take();
    expect(carried.map((ack) => ack.tag)).toEqual(['a']);
    for (const ack of carried) ack.settle(true);
    await acked;
    await sleep(80);
    expect(sent).toEqual([]); // the claim call carried it: no send of its own, even once the linger ran out
  });

  it('gives each ack its own linger: the timer of acks a claim call took does not send the next ones early', async () => {
    // Round trip after round trip: each ack lingers, the next claim call takes it, and the next ack comes soon after.
    const lingers = [20, 60_000];
    const { batcher, sent } = batcherWith(() => lingers.shift() ?? 0);
    const first = batcher.add({ tag: 'a', score: '1' });
    for (const ack of batcher.take()) ack.settle(true);
    await first;
    void batcher.add({ tag: 'b', score: '1' });
    await sleep(60); // the first ack's timer has fired
    expect(sent).toEqual([]);
    expect(batcher.take().map((ack) => ack.tag)).toEqual(['b']);
  });

  it('sends a lingering ack on its own when no claim call comes', async () => {
    let waiting = 0;
    const { batcher, sent } = batcherWith(() => (waiting > 0 ? 20 : 0));
    const acked = batcher.add({ tag: 'a', score: '1' });
    waiting = 1;
    await acked;
    expect(sent).toEqual([['a']]);
  });
});
