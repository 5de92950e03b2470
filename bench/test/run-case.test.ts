import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisAdmin } from '../src/broker-admin';
import { allCases, BATCH, type BenchCase } from '../src/cases';
import { mergeShared, runCase, type RunSettings } from '../src/run-case';
import { packBits } from '../src/runners/runner-kit';
import { stopAll } from '../src/runner-process';

// The whole path of a case — reset, runner processes, GO, result, broker-side completeness checks — on the raw
// ioredis baseline (the fastest runners to start). `pnpm bench:smoke` covers every system the same way.
// Database 14: the benchmark itself uses 15, so a test run never flushes a benchmark in progress.
const up = await brokerReachable('redis');
const url = (() => {
  const parsed = new URL(brokerUrls.redis);
  parsed.pathname = '/14';
  return parsed.toString();
})();

function byKey(key: string): BenchCase {
  const found = allCases().find((c) => c.key === key);
  if (!found) throw new Error(`no case ${key}`);
  return found;
}

describe.skipIf(!up)('runCase (raw ioredis, small N)', () => {
  let settings: RunSettings;

  beforeAll(async () => {
    settings = {
      n: 50,
      roundTrips: 20,
      batch: BATCH,
      urls: { redis: url, amqp: brokerUrls.amqp },
      stepTimeoutMs: 20_000,
      redis: await RedisAdmin.open(url),
      amqp: null,
    };
  });

  afterAll(async () => {
    await stopAll();
    await settings.redis?.flush();
    await settings.redis?.close();
  });

  it('W1: publishes N and finds exactly N in the broker', async () => {
    const result = await runCase(byKey('redis.W1.raw-ioredis.bulk'), settings);
    expect(result.kind).toBe('rate');
  }, 30_000);

  it('W2: fills, drains after GO, and finds nothing left', async () => {
    const result = await runCase(byKey('redis.W2.raw-ioredis.brpop'), settings);
    expect(result).toMatchObject({ kind: 'rate' });
    // The worker's resident memory, from /proc, waiting and at its peak (a Node process holds well over 10 MiB).
    if (result.kind !== 'rate') throw new Error('expected a rate');
    expect(result.rssIdleMiB).toBeGreaterThan(10);
    expect(result.rssPeakMiB).toBeGreaterThanOrEqual(result.rssIdleMiB ?? Infinity);
    expect(await settings.redis?.leftover('raw-ioredis', 'kqbench.raw-ioredis')).toEqual({ queued: 0, unacked: 0, failed: 0 });
    // The redis-server process's own CPU per task, read from /proc beside the command time (the server is local here).
    expect(result.redisProcessCpuUs).toBeGreaterThan(0);
  }, 30_000);

  it('W3: round trips through a serving worker and reports p50 ≤ p99', async () => {
    const result = await runCase(byKey('redis.W3.raw-ioredis'), settings);
    if (result.kind !== 'latency') throw new Error('expected latencies');
    expect(result.p50).toBeLessThanOrEqual(result.p99);
  }, 30_000);

  it('W1 on Celery envelopes: the raw LPUSH stores what kq would, one LPUSH per task, and says how many bytes', async () => {
    const result = await runCase(byKey('redis.W1.raw-ioredis.awaited.celery'), settings);
    if (result.kind !== 'rate') throw new Error('expected a rate');
    expect(result.bytesPerTask).toBeGreaterThan(500); // a protocol 2 message in its Kombu envelope, not bare JSON
    expect(result.redisCommands?.['lpush']?.calls).toBe(1);
  }, 30_000);

  it('W4: two kq processes drain one queue together; every task once, Redis busy measured', async () => {
    const result = await runCase(byKey('redis.W4.kq.p2'), settings);
    if (result.kind !== 'scale') throw new Error('expected a scale result');
    expect(result.perSecond).toBeGreaterThan(0);
    expect(result.brokerCpuUs).toBeGreaterThan(0);
    expect(result.redisBusy).toBeGreaterThan(0);
  }, 60_000);

  it('W5: a kq worker’s RSS waiting on an empty queue and at its peak while it drains', async () => {
    const result = await runCase(byKey('redis.W5.kq.c100'), settings);
    if (result.kind !== 'memory') throw new Error('expected a memory result');
    expect(result.idleMiB).toBeGreaterThan(10);
    expect(result.peakMiB).toBeGreaterThanOrEqual(result.idleMiB ?? Infinity);
  }, 60_000);

  it('W6: round trips while a producer keeps the same kq worker busy on a second queue', async () => {
    const result = await runCase(byKey('redis.W6.kq'), settings);
    if (result.kind !== 'latency') throw new Error('expected latencies');
    expect(result.p50).toBeLessThanOrEqual(result.p99);
  }, 60_000);

  it('refuses a database 0 URL, so it can never flush real data', async () => {
    const parsed = new URL(brokerUrls.redis);
    parsed.pathname = '/0';
    await expect(RedisAdmin.open(parsed.toString())).rejects.toThrow(/give it one of its own/);
  });
});

describe('mergeShared', () => {
  it('ORs the bitmaps of a shared drain’s processes: distinct indexes and runs in all, a duplicate shows', () => {
    const flags = (n: number, indexes: number[]) => {
      const seen = new Uint8Array(n);
      for (const index of indexes) seen[index] = 1;
      return Buffer.from(packBits(seen)).toString('base64');
    };
    const a = { kind: 'drain' as const, elapsedMs: 1, processed: 6, distinct: 6, seen: flags(11, [0, 1, 2, 3, 8, 10]) };
    const b = { kind: 'drain' as const, elapsedMs: 1, processed: 6, distinct: 6, seen: flags(11, [4, 5, 6, 7, 9, 10]) };
    expect(mergeShared([a, b], 11)).toEqual({ distinct: 11, processed: 12 });
    expect(mergeShared([a], 11)).toEqual({ distinct: 6, processed: 6 });
  });
});
