// What an idle kq consumer costs Redis: one BRPOP per IDLE_BLOCK_MS, and lease sweeps once a lease (each sweep sets
// the next for when the first lease it saw runs out), both counted with MONITOR on the shared server under the
// file's own prefix; the sweep's and the delayed-delivery promoter's schedules on fake timers.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Queue, type Delivery, type OutgoingMessage } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RedisClient } from '../src/connection-factory';
import { DelayedPromoter, MAX_SLEEP_MS } from '../src/delayed-promoter';
import { IDLE_BLOCK_MS, defaultBlockMs } from '../src/idle-wait';
import { KeyLayout, DEFAULT_KEY_NAMES, KOMBU_SEP } from '../src/key-layout';
import { VISIBILITY_SCAN } from '../src/lua-scripts';
import { Sweeper } from '../src/sweeper';
import { monitorFeed } from './helpers/monitor-feed';
import { useRedisFixture, waitFor } from './helpers/redis-test-env';

const up = await brokerReachable('redis');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function message(text: string): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

describe('the idle BRPOP wait by default', () => {
  it('is IDLE_BLOCK_MS, shortened under an ioredis commandTimeout or socketTimeout, and Kombu’s second in the cluster layout', () => {
    expect(defaultBlockMs(false, undefined)).toBe(IDLE_BLOCK_MS);
    expect(IDLE_BLOCK_MS).toBeGreaterThanOrEqual(30_000);
    expect(defaultBlockMs(false, { commandTimeout: 4000 })).toBe(3500);
    expect(defaultBlockMs(false, { socketTimeout: 2000, commandTimeout: 60_000 })).toBe(1500);
    expect(defaultBlockMs(false, { commandTimeout: 300 })).toBe(1000);
    expect(defaultBlockMs(true, undefined)).toBe(1000);
  });
});

describe('a lease sweep that follows the leases', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A Sweeper whose scans answer `replies` in turn (the last one over and over); counts the lease scans. */
  function sweeperAnswering(replies: unknown[][], restoreLimit = 100): { sweeper: Sweeper; scans: () => number } {
    let scans = 0;
    const commands = {
      zrangebyscore: async (): Promise<string[]> => [], // no abandoned in-flight lists
      set: async (): Promise<unknown> => 'OK', // the sweep gate: this process is alone
      evalsha: async (sha: string): Promise<unknown> => {
        if (sha !== VISIBILITY_SCAN.sha) return 0; // the restore script
        const reply = replies[Math.min(scans, replies.length - 1)];
        scans++;
        return reply;
      },
    } as unknown as RedisClient;
    return { sweeper: new Sweeper(sweeperOptions(commands, restoreLimit)), scans: () => scans };
  }

  it('with nothing held, sweeps once a lease (30 s), not every 5 s', async () => {
    vi.useFakeTimers();
    const { sweeper, scans } = sweeperAnswering([[-1]]);
    sweeper.start();
    await vi.advanceTimersByTimeAsync(120_000);
    sweeper.stop();
    // The start-up sweep, then one every 30 to 33 s.
    expect(scans()).toBeGreaterThanOrEqual(4);
    expect(scans()).toBeLessThanOrEqual(5);
  });

  it('sweeps again when the first lease it saw runs out, not a whole lease later', async () => {
    vi.useFakeTimers();
    const { sweeper, scans } = sweeperAnswering([[1200], [-1]]);
    sweeper.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(scans()).toBe(1);
    await vi.advanceTimersByTimeAsync(1199);
    expect(scans()).toBe(1);
    await vi.advanceTimersByTimeAsync(122);
    expect(scans()).toBe(2);
    sweeper.stop();
  });

  it('sweeps again at once when a sweep hit its restore limit, and within 5 s after a failed one', async () => {
    vi.useFakeTimers();
    const stale = ['tag-1', '1.000000', null, 'tag-2', '1.000000', null];
    const { sweeper, scans } = sweeperAnswering([[-1, ...stale], [-1]], 2);
    sweeper.start();
    await vi.advanceTimersByTimeAsync(200);
    expect(scans()).toBe(2);
    sweeper.stop();

    let calls = 0;
    const refusing = {
      zrangebyscore: async (): Promise<string[]> => [],
      set: async (): Promise<unknown> => 'OK',
      evalsha: async (): Promise<unknown> => {
        calls++;
        throw new Error('Connection is closed.');
      },
    } as unknown as RedisClient;
    const failing = new Sweeper(sweeperOptions(refusing, 100));
    failing.start();
    await vi.advanceTimersByTimeAsync(5600);
    failing.stop();
    expect(calls).toBe(2);
  });
});

/** A Sweeper's options as kq's defaults set them for a 30 s lease, with `commands` standing in for Redis. */
function sweeperOptions(commands: RedisClient, restoreLimit: number): ConstructorParameters<typeof Sweeper>[0] {
  return {
    commands,
    layout: new KeyLayout({ prefix: '', sep: KOMBU_SEP, steps: [0, 3, 6, 9], fanoutPrefix: '/0.', fanoutPatterns: true, cluster: false, names: DEFAULT_KEY_NAMES }),
    scopes: () => Promise.resolve(['']),
    leaseSweepIntervalMs: 30_000,
    leaseSweepFollowsExpiry: true,
    inflightGraceMs: 60_000,
    visibilitySweepIntervalMs: 1_000_000,
    visibilityTimeout: 3600,
    restoreLimit,
    route: () => Promise.resolve([]),
    warn: () => undefined,
    onError: () => undefined,
  };
}

describe.skipIf(!up)('an idle consumer on Redis, by default', () => {
  const fixture = useRedisFixture('idle-cost');
  const { prefix, transport } = fixture;

  /** Commands MONITOR saw while `during` ran, up to a marker sent after it (the feed may lag behind replies). */
  async function monitored(during: () => Promise<void>): Promise<Array<{ args: string[]; source: string }>> {
    const seen: Array<{ args: string[]; source: string }> = [];
    const feed = await monitorFeed(fixture.redis);
    feed.on('monitor', (_time, args, source) => void seen.push({ args, source }));
    try {
      await during();
      const marker = `${prefix}marker-${randomUUID()}`;
      await fixture.redis.echo(marker);
      await waitFor(() => seen.some(({ args }) => args[1] === marker), 5000, 'the monitor to catch up');
    } finally {
      feed.disconnect();
    }
    return seen;
  }

  it('waits in one BRPOP for seconds, not one a second; a message still wakes it, and a cancel does not wait the wait out', async () => {
    const consumerSide = transport();
    const channel = await consumerSide.createChannel();
    await channel.declareQueue(new Queue('quiet'));
    const received: Delivery[] = [];
    let consumer: Awaited<ReturnType<typeof channel.consume>> | undefined;
    const seen = await monitored(async () => {
      consumer = await channel.consume({ queues: ['quiet'], prefetch: 1, onMessage: (delivery) => received.push(delivery) });
      await sleep(3200);
    });
    const brpops = seen.filter(({ args }) => args[0]?.toLowerCase() === 'brpop' && args[1] === `${prefix}quiet`);
    // Kombu's 1 s wait would have asked three or four times.
    expect(brpops.length).toBe(1);

    await (await consumerSide.createChannel()).publish('', 'quiet', message('wakes it'));
    await waitFor(() => received.length === 1, 3000, 'the message to wake the wait');
    await received[0]?.ack();
    const cancelling = Date.now();
    await consumer?.cancel();
    expect(Date.now() - cancelling).toBeLessThan(IDLE_BLOCK_MS / 2);
  });

  it('sweeps for expired leases once a lease while nothing is held, and still restores a dead holder’s delivery when its lease runs out', async () => {
    const leaseMs = 1000;
    const survivor = transport({ leaseMs, pollIntervalMs: 200 });
    const channel = await survivor.createChannel();
    await channel.declareQueue(new Queue('swept'));
    const seen = await monitored(async () => {
      await channel.consume({ queues: ['swept'], prefetch: 1, onMessage: () => undefined });
      await sleep(5000);
    });
    const scans = seen.filter(({ args, source }) => source === 'lua' && args[0]?.toLowerCase() === 'zrevrangebyscore' && args[1] === `${prefix}unacked_index`);
    // A fixed sweep every leaseMs / 2 (the old default) would have scanned eleven times.
    expect(scans.length).toBeGreaterThanOrEqual(3);
    expect(scans.length).toBeLessThanOrEqual(7);

    // A holder that never renews (as good as dead) takes a message of another queue: the survivor's sweep puts it
    // back once its lease ran out.
    const holder = transport({ leaseMs, leaseRenewIntervalMs: 1_000_000, sweepIntervalMs: 1_000_000 });
    const holderChannel = await holder.createChannel();
    await holderChannel.declareQueue(new Queue('held'));
    await holderChannel.publish('', 'held', message('held, then dropped'));
    expect(await holderChannel.get('held')).not.toBeNull();
    expect(await fixture.redis.llen(`${prefix}held`)).toBe(0);
    await waitFor(async () => (await fixture.redis.llen(`${prefix}held`)) === 1, 5000, 'the survivor to restore it');
    // The restore lands in Redis inside the sweep script, before the survivor has read the script's reply and
    // counted it: the list can be seen restored a moment before the count.
    await waitFor(() => survivor.stats().leaseRestored > 0, 2000, 'the survivor to count its restore');
    expect(survivor.stats()).toMatchObject({ leaseRestored: 1 });
  });
});

describe('the delayed-delivery promoter of an idle process', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('looks at the delayed set once every MAX_SLEEP_MS (5 min) while it is empty, not every 30 s, and at once on a nudge', async () => {
    vi.useFakeTimers();
    let looks = 0;
    const commands = {
      evalsha: async (): Promise<unknown> => {
        looks++;
        return [0, -1]; // nothing moved, nothing due
      },
    } as unknown as RedisClient;
    const subscriber = Object.assign(new EventEmitter(), { subscribe: async (): Promise<number> => 1 }) as unknown as RedisClient;
    const layout = new KeyLayout({ prefix: '', sep: KOMBU_SEP, steps: [0, 3, 6, 9], fanoutPrefix: '/0.', fanoutPatterns: true, cluster: false, names: DEFAULT_KEY_NAMES });
    const promoter = new DelayedPromoter({ commands, subscriber, layout, scopes: () => Promise.resolve(['']), onError: () => undefined });
    await promoter.start();
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(MAX_SLEEP_MS).toBe(300_000);
    expect(looks).toBe(3); // at start, then at 5 and 10 minutes
    subscriber.emit('message', layout.key('delayedNudge'), '');
    await vi.advanceTimersByTimeAsync(0);
    expect(looks).toBe(4);
    promoter.stop();
  });
});
