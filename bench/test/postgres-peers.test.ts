import { execFileSync } from 'node:child_process';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresAdmin } from '../src/broker-admin';
import { allCases, BATCH, type BenchCase } from '../src/cases';
import type { CaseOutcome } from '../src/outcome';
import { processTreeCpuUs, serverCpuUs } from '../src/process-tree';
import { renderMarkdown } from '../src/report/markdown';
import { checkTargets } from '../src/report/targets';
import { postgresCosts, runCase, type RunSettings } from '../src/run-case';
import { stopAll } from '../src/runner-process';
import { postgresUrlFor } from '../src/systems';

function byKey(key: string): BenchCase {
  const found = allCases().find((c) => c.key === key);
  if (!found) throw new Error(`no case ${key}`);
  return found;
}

describe('PostgreSQL peers: cases and databases', () => {
  it('runs pg-boss and graphile-worker in W1 (awaited and bulk), W2 (c1, c100), W3 and W5 next to kq', () => {
    const keys = allCases()
      .filter((c) => c.broker === 'postgres')
      .map((c) => c.key);
    for (const system of ['kq', 'pg-boss', 'graphile-worker']) {
      for (const suffix of ['W1.%.awaited', 'W1.%.bulk', 'W2.%.c1', 'W2.%.c100', 'W3.%', 'W5.%.c100']) {
        expect(keys).toContain(`postgres.${suffix.replace('%', system)}`);
      }
    }
  });

  it('gives each peer a database of its own next to kq’s', () => {
    const base = 'postgresql://postgres@127.0.0.1:5432/kqbench';
    expect(postgresUrlFor(base, 'kq')).toBe(base);
    expect(postgresUrlFor(base, 'pg-boss')).toBe('postgresql://postgres@127.0.0.1:5432/kqbench_pgboss');
    expect(postgresUrlFor(`${base}?application_name=x`, 'graphile-worker')).toBe('postgresql://postgres@127.0.0.1:5432/kqbench_graphile?application_name=x');
  });

  it('turns two readings into costs per task', () => {
    expect(postgresCosts({ cpuUs: 1000, walBytes: 500, commits: 10 }, { cpuUs: 3000, walBytes: 4500, commits: 30 }, 20)).toEqual({
      brokerCpuUs: 100,
      walBytesPerTask: 200,
      commitsPerTask: 1,
    });
    expect(postgresCosts({ cpuUs: null, walBytes: 0, commits: 0 }, { cpuUs: null, walBytes: 10, commits: 1 }, 10)).not.toHaveProperty('brokerCpuUs');
  });
});

describe('serverCpuUs', () => {
  it('counts the CPU of children the server has already reaped, as PostgreSQL’s ended backends', () => {
    const ownBefore = processTreeCpuUs(process.pid) ?? 0;
    const before = serverCpuUs(process.pid) ?? 0;
    // A child that burns CPU and exits; execFileSync waits for it, so it is reaped before the second reading.
    execFileSync(process.execPath, ['-e', 'const end = process.cpuUsage().user + 300000; while (process.cpuUsage().user < end);']);
    const ownAfter = processTreeCpuUs(process.pid) ?? 0;
    const after = serverCpuUs(process.pid) ?? 0;
    // The child's 300 ms of CPU is counted beyond what this process itself used meanwhile (10 ms ticks).
    expect(after - before - (ownAfter - ownBefore)).toBeGreaterThanOrEqual(250_000);
  });
});

describe('PostgreSQL targets and tables (issue #35)', () => {
  const rate = (key: string, perSecond: number, more: Record<string, number> = {}): CaseOutcome => ({
    case: byKey(key),
    runs: [{ kind: 'rate', perSecond, ...more }],
    failures: [],
  });
  const outcomes: CaseOutcome[] = [
    rate('postgres.W1.kq.bulk', 15_000, { workerCpuUs: 40, brokerCpuUs: 30, walBytesPerTask: 900, commitsPerTask: 0.001 }),
    rate('postgres.W1.graphile-worker.bulk', 20_000, { workerCpuUs: 20, brokerCpuUs: 25, walBytesPerTask: 700, commitsPerTask: 0.001 }),
    rate('postgres.W1.pg-boss.bulk', 10_000, { workerCpuUs: 30, brokerCpuUs: 60, walBytesPerTask: 1500, commitsPerTask: 0.001 }),
    rate('postgres.W2.kq.c100', 9_000, { workerCpuUs: 60, brokerCpuUs: 50, walBytesPerTask: 600, commitsPerTask: 0.05 }),
    rate('postgres.W2.graphile-worker.c100', 5_000, { workerCpuUs: 50, brokerCpuUs: 80, walBytesPerTask: 400, commitsPerTask: 0.02 }),
    rate('postgres.W2.pg-boss.c100', 2_000, { workerCpuUs: 90, brokerCpuUs: 120, walBytesPerTask: 2000, commitsPerTask: 0.04 }),
    { case: byKey('postgres.W3.kq'), runs: [{ kind: 'latency', p50: 1.8, p99: 4, brokerCpuUs: 400, walBytesPerTask: 1200, commitsPerTask: 5 }], failures: [] },
    { case: byKey('postgres.W3.graphile-worker'), runs: [{ kind: 'latency', p50: 2.5, p99: 6, brokerCpuUs: 500, walBytesPerTask: 1300, commitsPerTask: 6 }], failures: [] },
  ];
  const checks = checkTargets(outcomes);
  const find = (text: string) => checks.find((check) => check.goal.includes(text));

  it('states each goal with its same-run ratio', () => {
    expect(find('kq ≥ 1.5× graphile-worker at concurrency 100')).toMatchObject({ met: true, measured: expect.stringContaining('1.80×') });
    expect(find('kq ≥ 3× pg-boss at concurrency 100')).toMatchObject({ met: true });
    expect(find('kq bulk ≥ graphile-worker addJobs')).toMatchObject({ met: false, measured: expect.stringContaining('0.75×') });
    expect(find('kq p50 ≤ graphile-worker p50')).toMatchObject({ met: true });
    expect(find('kq p50 ≤ 2 ms')).toMatchObject({ met: true });
  });

  it('sums publish and drain for what a task costs the server, and explains the goal missed with each system’s costs', () => {
    // CPU: kq 30 + 50 = 80, graphile 105, pg-boss 180; WAL: kq 1500, graphile 1100 (lower): missed.
    expect(find('PostgreSQL CPU per task')).toMatchObject({ met: true, measured: expect.stringContaining('**kq** 80 µs') });
    const wal = find('WAL bytes per task');
    expect(wal).toMatchObject({ met: false, measured: expect.stringContaining('graphile-worker 1100 bytes') });
    expect(wal?.why).toContain('graphile-worker, concurrency 100 80.0 µs of PostgreSQL CPU, 400 WAL bytes, 1/50 commits');
  });

  it('adds WAL and commits per task to the PostgreSQL tables, the server’s CPU per round trip to W3, and the soak', () => {
    const markdown = renderMarkdown({
      outcomes,
      machine: {
        date: '2026-01-01T00:00:00Z', cpu: 'Test CPU', cores: 2, memory: '8.0 GiB', os: 'Linux', node: 'v20.0.0', redis: 'not used', rabbitmq: 'not used',
        postgres: '15.20', python: 'Python 3.11.2', kq: 'abc1234', packages: {}, loadBefore: '0 / 0 / 0', loadAfter: '0 / 0 / 0',
      },
      command: 'pnpm bench -- --only postgres',
      n: 20_000,
      roundTrips: 1000,
      runs: 1,
      durationS: 60,
      chartFile: 'results.svg',
      soak: '| completed | at s |\n|---:|---:|\n| 100,000 | 25 |\n',
    });
    expect(markdown).toContain('| PostgreSQL CPU µs/task | worker RSS MiB idle / peak | WAL bytes/task | commits/task |');
    expect(markdown).toMatch(/\| graphile-worker, concurrency 100 \| 5,000 \|.*\| 80\.0 \| — \| 400 \| 0\.02 \|/);
    expect(markdown).toContain('| PostgreSQL CPU µs/trip | WAL bytes/trip | commits/trip |');
    expect(markdown).toMatch(/\| \*\*kq \(PostgreSQL results\)\*\* \| 1\.80 \|.*\| 400 \| 1200 \| 5\.00 \|/);
    // The last soak's table, under PostgreSQL, before the next section.
    expect(markdown).toMatch(/### Soak — `pnpm bench:soak`[^\n]*\n\n\| completed \| at s \|\n\|---:\|---:\|\n\| 100,000 \| 25 \|\n\n## /);
  });
});

// The whole path on PostgreSQL for the peers: a database of their own (created if missing), reset, runners,
// completeness read back from their tables, and the server's costs. A database of the tests' own, so a test run
// never touches a benchmark in progress.
const up = await brokerReachable('postgres');
const base = (() => {
  const parsed = new URL(brokerUrls.postgres);
  parsed.pathname = '/kqbench_test';
  return parsed.toString();
})();

describe.skipIf(!up)('runCase on PostgreSQL (peers, small N)', () => {
  let settings: RunSettings;

  beforeAll(async () => {
    settings = {
      n: 40,
      roundTrips: 10,
      batch: BATCH,
      urls: { redis: brokerUrls.redis, amqp: brokerUrls.amqp, postgres: base },
      stepTimeoutMs: 30_000,
      redis: null,
      amqp: null,
      postgres: await PostgresAdmin.open(base),
    };
  });

  afterAll(async () => {
    await stopAll();
    await settings.postgres?.close();
  });

  it('pg-boss W1 bulk: inserts N jobs, finds exactly N queued in its own database, and reports WAL and commits per task', async () => {
    const result = await runCase(byKey('postgres.W1.pg-boss.bulk'), settings);
    expect(result.kind).toBe('rate');
    if (result.kind !== 'rate') return;
    expect(result.walBytesPerTask).toBeGreaterThan(0);
    expect(result.commitsPerTask).toBeGreaterThan(0);
    expect(await settings.postgres?.leftover('pg-boss', 'kqbench.pg-boss')).toEqual({ queued: 40, unacked: 0, failed: 0 });
  }, 60_000);

  it('graphile-worker W2: drains every job after GO and leaves nothing behind', async () => {
    const result = await runCase(byKey('postgres.W2.graphile-worker.c100'), settings);
    expect(result).toMatchObject({ kind: 'rate' });
    expect(await settings.postgres?.leftover('graphile-worker', 'kqbench.graphile-worker')).toEqual({ queued: 0, unacked: 0, failed: 0 });
  }, 60_000);

  it('pg-boss W3: round trips through a worker woken by NOTIFY, the result NOTIFYed back', async () => {
    const result = await runCase(byKey('postgres.W3.pg-boss'), settings);
    expect(result).toMatchObject({ kind: 'latency' });
  }, 60_000);
});
