// Heartbeats on the wall clock's multiples of the interval (issue #36): a fleet's heartbeats reach the broker
// together, so it wakes once for them rather than once for each. The ticker on fake timers (its rules, and a property
// over start times, periods and offsets), then two workers started half an interval apart beating together.
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AlignedTicker, ALIGNMENT_WINDOW_MS } from '../src/cluster/aligned-ticker';
import { clusterSteps } from '../src/cluster/cluster-steps';
import type { ReceivedEvent } from '../src/events/event';
import { EventReceiver } from '../src/events/event-receiver';
import { memoryApp, memoryBrokerName, recordingLogger, waitFor } from './fixtures/cluster/helpers';

describe('AlignedTicker', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Runs a ticker from `startAt` (wall-clock ms) for `runMs` and returns the times it ticked. */
  function ticksOf(periodMs: number, offsetMs: number, startAt: number, runMs: number, during?: (ticks: number[]) => void): number[] {
    vi.useFakeTimers({ now: startAt });
    const ticks: number[] = [];
    const ticker = new AlignedTicker(periodMs, () => {
      ticks.push(Date.now());
      during?.(ticks);
    }, { offsetMs });
    ticker.start();
    vi.advanceTimersByTime(runMs);
    ticker.stop();
    vi.useRealTimers();
    return ticks;
  }

  it('ticks on multiples of the period plus its offset, the first at most a period after the start', () => {
    expect(ticksOf(2000, 30, 1_000_000_700, 7000)).toEqual([1_000_002_030, 1_000_004_030, 1_000_006_030]);
    // Started just past a multiple: the first tick is the next one, not a catch-up for the one just missed.
    expect(ticksOf(2000, 30, 1_000_000_031, 2000)).toEqual([1_000_002_030]);
  });

  it('puts any two tickers of one period, started anywhere, within the window of each other', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 50, max: 5000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (start, later, periodMs, a, b) => {
          const window = Math.min(ALIGNMENT_WINDOW_MS, periodMs / 10);
          // The second starts a period or more after the first and stops two before it, so each of its ticks has
          // the first's on both sides to be compared with.
          const first = ticksOf(periodMs, a * window, start, later + 6 * periodMs);
          const second = ticksOf(periodMs, b * window, start + periodMs + later, 3 * periodMs);
          for (const tick of second) {
            const nearest = Math.min(...first.map((other) => Math.abs(other - tick)));
            expect(nearest).toBeLessThanOrEqual(window + 1); // timers fire on whole milliseconds
          }
          // Every gap is the period, and the first tick comes within one.
          expect(second[0]! - (start + periodMs + later)).toBeLessThanOrEqual(periodMs);
          for (let index = 1; index < second.length; index++) expect(Math.abs(second[index]! - second[index - 1]! - periodMs)).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('follows a late tick with the next multiple, not a burst that catches up', () => {
    const ticks = ticksOf(1000, 10, 5_000_000, 6000, (done) => {
      // Its timer then fires 2.5 s after its time: Date.now() moves on, the fake timers' own clock does not.
      if (done.length === 2) vi.setSystemTime(Date.now() + 2500);
    });
    expect(ticks.slice(0, 2)).toEqual([5_000_010, 5_001_010]);
    expect(ticks.slice(2, 4)).toEqual([5_004_510, 5_005_010]);
    expect(new Set(ticks).size).toBe(ticks.length);
  });

  it('does not tick twice when its timer fires early, and finds the multiples again when the clock is set back', () => {
    vi.useFakeTimers({ now: 9_000_000 });
    const ticks: number[] = [];
    const ticker = new AlignedTicker(1000, () => ticks.push(Date.now()), { offsetMs: 0 });
    ticker.start();
    // A timer that fires a millisecond before its multiple (timers and the wall clock round differently).
    vi.setSystemTime(9_000_999 - 1000);
    vi.advanceTimersByTime(1000);
    expect(ticks).toEqual([9_000_999]);
    vi.advanceTimersByTime(999);
    expect(ticks).toEqual([9_000_999]);
    vi.advanceTimersByTime(2);
    expect(ticks).toEqual([9_000_999, 9_002_000]);
    // Set back an hour: the next tick is still within a period, on a multiple.
    vi.setSystemTime(Date.now() - 3_600_000);
    vi.advanceTimersByTime(1000);
    vi.advanceTimersByTime(1000);
    ticker.stop();
    expect(ticks.length).toBeGreaterThanOrEqual(3);
    expect(ticks.at(-1)! % 1000).toBe(0);
  });

  it('refuses a period that is not a positive number of ms', () => {
    expect(() => new AlignedTicker(0, () => undefined)).toThrow(/positive number of ms/);
  });
});

describe('heartbeats of a fleet', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  it('beat every millisecond or so with an interval of 0, as they did on a plain timer', async () => {
    const broker = memoryBrokerName('aligned-heartbeats-zero');
    const app = memoryApp(broker);
    const received: ReceivedEvent[] = [];
    const receiver = new EventReceiver(app.connection, { clock: app.clock, exchange: app.conf.eventExchange, handlers: { 'worker-heartbeat': (event) => received.push(event) } });
    await receiver.start();
    const worker = app.worker({ hostname: 'zero@aligned', logger: recordingLogger('zero').logger, steps: clusterSteps({ heartbeatInterval: 0, gossip: false, mingle: false }) });
    cleanups.push(async () => {
      await worker.stop();
      await receiver.close();
      await app.close();
    });
    await worker.start();
    await waitFor(() => received.length >= 5, 5000, 'five heartbeats');
  });

  it('go out together from workers started half an interval apart', async () => {
    const INTERVAL = 0.4;
    const broker = memoryBrokerName('aligned-heartbeats');
    const monitor = memoryApp(broker);
    const received: ReceivedEvent[] = [];
    const receiver = new EventReceiver(monitor.connection, {
      clock: monitor.clock,
      exchange: monitor.conf.eventExchange,
      handlers: { 'worker-heartbeat': (event) => received.push(event) },
    });
    await receiver.start();
    cleanups.push(async () => {
      await receiver.close();
      await monitor.close();
    });
    async function start(hostname: string): Promise<void> {
      const app = memoryApp(broker);
      const worker = app.worker({ hostname, logger: recordingLogger(hostname).logger, steps: clusterSteps({ heartbeatInterval: INTERVAL, gossip: false, mingle: false }) });
      cleanups.push(async () => {
        await worker.stop();
        await app.close();
      });
      await worker.start();
    }
    await start('a@aligned');
    await new Promise((resolve) => setTimeout(resolve, (INTERVAL * 1000) / 2));
    await start('b@aligned');
    const beats = (hostname: string): number[] => received.filter((event) => event.hostname === hostname).map((event) => event.local_received * 1000);
    // Until a has beaten near or after b's third (unaligned, half an interval after it).
    await waitFor(() => beats('b@aligned').length >= 3 && (beats('a@aligned').at(-1) ?? 0) > beats('b@aligned')[2]! - 100, 10_000, 'three heartbeats from b, and a beat of a near or after the third');
    // Unaligned, b's would fall half an interval (200 ms) from a's; aligned, within the 40 ms window and timer delays.
    for (const at of beats('b@aligned').slice(0, 3)) {
      const nearest = Math.min(...beats('a@aligned').map((other) => Math.abs(other - at)));
      expect(nearest).toBeLessThan(100);
    }
  });
});
