// The fleet's lease sweeps pass a gate (SET NX PX): one process per interval runs the scan script, and a dead
// holder's deliveries still come back within lease + interval. Two Sweepers on one stand-in Redis, on fake timers.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RedisClient } from '../src/connection-factory';
import { KeyLayout, DEFAULT_KEY_NAMES, KOMBU_SEP } from '../src/key-layout';
import { VISIBILITY_SCAN } from '../src/lua-scripts';
import { Sweeper } from '../src/sweeper';

const INTERVAL_MS = 30_000;

/** Keys with a deadline (SET NX PX) and leases (tag → deadline), shared by the processes. */
class StandInRedis {
  readonly keys = new Map<string, { value: string; until: number }>();
  readonly leases = new Map<string, number>();
  readonly restoredAt = new Map<string, number>();

  /** A process's connection: counts its scans and gate asks. */
  client(): { commands: RedisClient; scans: () => number; sets: () => number } {
    let scans = 0;
    let sets = 0;
    const commands = {
      zrangebyscore: async (): Promise<string[]> => [], // no abandoned in-flight lists
      set: async (key: string, value: string, px: string, ms: number, nx: string): Promise<string | null> => {
        sets++;
        expect([px, nx]).toEqual(['PX', 'NX']);
        const held = this.keys.get(key);
        if (held && held.until > Date.now()) return null;
        this.keys.set(key, { value, until: Date.now() + ms });
        return 'OK';
      },
      evalsha: async (sha: string, _keys: number, ...rest: unknown[]): Promise<unknown> => {
        const now = Date.now();
        if (sha === VISIBILITY_SCAN.sha) {
          scans++;
          let next = Infinity;
          const found: unknown[] = [];
          for (const [tag, until] of this.leases) {
            if (until <= now) found.push(tag, '1.000000', null);
            else next = Math.min(next, until - now);
          }
          return [next === Infinity ? -1 : next, ...found];
        }
        // The restore script: (prefix, mutex, tag, score, envelope, n, …) per delivery.
        let restored = 0;
        for (const arg of rest.slice(5)) {
          if (typeof arg === 'string' && this.leases.delete(arg)) {
            this.restoredAt.set(arg, now);
            restored++;
          }
        }
        return restored;
      },
    } as unknown as RedisClient;
    return { commands, scans: () => scans, sets: () => sets };
  }
}

function gatedSweeper(commands: RedisClient, leaseSweepFollowsExpiry = true): Sweeper {
  return new Sweeper({
    commands,
    layout: new KeyLayout({ prefix: '', sep: KOMBU_SEP, steps: [0], fanoutPrefix: '/0.', fanoutPatterns: true, names: DEFAULT_KEY_NAMES }),
    scopes: () => Promise.resolve(['']),
    leaseSweepIntervalMs: INTERVAL_MS,
    leaseSweepFollowsExpiry,
    inflightGraceMs: 60_000,
    visibilitySweepIntervalMs: 1_000_000,
    visibilityTimeout: 3600,
    restoreLimit: 100,
    route: () => Promise.resolve([]),
    warn: () => undefined,
    onError: (error) => {
      throw error;
    },
  });
}

describe('the lease sweep gate', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lets one process of a fleet run the scan script per interval; the others ask the gate only', async () => {
    vi.useFakeTimers();
    const redis = new StandInRedis();
    const processes = Array.from({ length: 5 }, () => redis.client());
    const sweepers = processes.map(({ commands }) => gatedSweeper(commands));
    for (const sweeper of sweepers) sweeper.start();
    await vi.advanceTimersByTimeAsync(0);
    const startUp = processes.reduce((sum, { scans }) => sum + scans(), 0);
    expect(startUp).toBe(5); // Kombu's start-up restore, in every process
    await vi.advanceTimersByTimeAsync(10 * INTERVAL_MS);
    for (const sweeper of sweepers) sweeper.stop();
    const scans = processes.reduce((sum, { scans }) => sum + scans(), 0) - startUp;
    // Ungated, each of the 5 would scan about 10 times (50); gated, about one scan an interval for them all.
    expect(scans).toBeGreaterThanOrEqual(8);
    expect(scans).toBeLessThanOrEqual(13);
  });

  it('still brings a dead holder’s delivery back within lease + interval', async () => {
    vi.useFakeTimers();
    const redis = new StandInRedis();
    const processes = Array.from({ length: 3 }, () => redis.client());
    const sweepers = processes.map(({ commands }) => gatedSweeper(commands));
    for (const sweeper of sweepers) sweeper.start();
    await vi.advanceTimersByTimeAsync(0);
    for (let round = 0; round < 4; round++) {
      // Each round, the process that last scanned holds the gate: it takes a delivery (a 30 s lease) and dies.
      await vi.advanceTimersByTimeAsync(INTERVAL_MS * 0.7);
      const before = processes.map(({ scans }) => scans());
      await vi.advanceTimersByTimeAsync(INTERVAL_MS * 1.2);
      const holder = processes.findIndex(({ scans }, index) => scans() > (before[index] ?? 0));
      expect(holder).toBeGreaterThanOrEqual(0);
      const tag = `tag-${round}`;
      const diedAt = Date.now();
      redis.leases.set(tag, diedAt + 30_000);
      sweepers[holder]?.stop();
      await vi.advanceTimersByTimeAsync(30_000 + INTERVAL_MS + 1);
      expect(redis.restoredAt.get(tag)).toBeDefined();
      expect((redis.restoredAt.get(tag) ?? Infinity) - diedAt).toBeLessThanOrEqual(30_000 + INTERVAL_MS);
      sweepers[holder] = gatedSweeper(processes[holder]?.commands as RedisClient);
      sweepers[holder]?.start();
    }
    for (const sweeper of sweepers) sweeper.stop();
  });

  it('is not asked with a fixed sweep interval (the fault suite’s sweepIntervalMs): every process sweeps', async () => {
    vi.useFakeTimers();
    const redis = new StandInRedis();
    const processes = Array.from({ length: 2 }, () => redis.client());
    const sweepers = processes.map(({ commands }) => gatedSweeper(commands, false));
    for (const sweeper of sweepers) sweeper.start();
    await vi.advanceTimersByTimeAsync(3 * INTERVAL_MS + 1);
    for (const sweeper of sweepers) sweeper.stop();
    expect(processes.map(({ scans }) => scans())).toEqual([4, 4]);
    expect(processes.map(({ sets }) => sets())).toEqual([0, 0]);
  });
});
