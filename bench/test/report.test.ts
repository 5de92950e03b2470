import { describe, expect, it } from 'vitest';
import { allCases, type BenchCase } from '../src/cases';
import type { MachineInfo } from '../src/machine-info';
import type { CaseOutcome } from '../src/outcome';
import { renderMarkdown } from '../src/report/markdown';
import { renderSvg } from '../src/report/svg';
import { redisHotPathTargets } from '../src/report/redis-hot-targets';
import { checkTargets, commandMix } from '../src/report/targets';

function byKey(key: string): BenchCase {
  const found = allCases().find((c) => c.key === key);
  if (!found) throw new Error(`no case ${key}`);
  return found;
}

const rate = (key: string, ...perSecond: number[]): CaseOutcome => ({
  case: byKey(key),
  runs: perSecond.map((value) => ({ kind: 'rate', perSecond: value })),
  failures: [],
});
const latency = (key: string, p50: number, p99: number): CaseOutcome => ({ case: byKey(key), runs: [{ kind: 'latency', p50, p99 }], failures: [] });

const kqDrainCommands = { evalsha: { calls: 1.01, usec: 8.2 }, hdel: { calls: 1, usec: 1.1 }, llen: { calls: 0.001, usec: 0.001 } };
const beeDrainCommands = { evalsha: { calls: 1, usec: 2.1 }, brpoplpush: { calls: 1, usec: 0.9 } };

const outcomes: CaseOutcome[] = [
  rate('redis.W1.kq.awaited', 15_000, 16_000, 17_000),
  rate('redis.W1.bee-queue.awaited', 9_000, 10_000, 11_000),
  rate('redis.W1.raw-ioredis.awaited.celery', 17_000),
  { case: byKey('redis.W1.kq.bulk'), runs: [{ kind: 'rate', perSecond: 90_000, workerCpuUs: 9.5, bytesPerTask: 1010, redisCommands: { evalsha: { calls: 0.001, usec: 4 } } }], failures: [] },
  { case: byKey('redis.W1.bee-queue.bulk'), runs: [{ kind: 'rate', perSecond: 140_000, workerCpuUs: 5.25, bytesPerTask: 52, redisCommands: { evalsha: { calls: 1, usec: 1.5 } } }], failures: [] },
  rate('redis.W1.raw-ioredis.bulk.celery', 120_000),
  rate('redis.W1.bullmq.bulk', 100_000),
  {
    case: byKey('redis.W2.kq.c100'),
    runs: [{ kind: 'rate', perSecond: 60_000, workerCpuUs: 31.25, brokerCpuUs: 12.5, rssIdleMiB: 71.6, rssPeakMiB: 118.2, redisCommands: kqDrainCommands }],
    failures: [],
  },
  rate('redis.W2.kq.c1', 10_000),
  { case: byKey('redis.W2.kq.c100.traced'), runs: [{ kind: 'rate', perSecond: 48_000, workerCpuUs: 39.75, brokerCpuUs: 12.5 }], failures: [] },
  { case: byKey('redis.W2.kq.c100.untraced'), runs: [{ kind: 'rate', perSecond: 61_000, workerCpuUs: 30.75, brokerCpuUs: 12.5 }], failures: [] },
  { case: byKey('redis.W2.bee-queue.c100'), runs: [{ kind: 'rate', perSecond: 50_000, workerCpuUs: 20, brokerCpuUs: 3, redisCommands: beeDrainCommands }], failures: [] },
  { ...rate('redis.W2.bee-queue.c1', 5_000, 7_000), failures: ['bee-queue, concurrency 1 [drain, redis] exited with code 1 before reporting a result.'] },
  rate('redis.W2.bullmq.c100', 20_000),
  rate('redis.W2.python-celery.solo', 1_300),
  latency('redis.W3.kq', 0.35, 2.5),
  latency('redis.W3.bee-queue', 0.4, 1.1),
  { case: byKey('redis.W3.bullmq'), runs: [], failures: ['BullMQ [serve, redis]: the worker becoming ready did not happen within 30 s.'] },
  { case: byKey('redis.W4.kq.p1'), runs: [{ kind: 'scale', perSecond: 30_000, workerCpuUs: 32, brokerCpuUs: 13, redisBusy: 0.39 }], failures: [] },
  { case: byKey('redis.W4.kq.p2'), runs: [{ kind: 'scale', perSecond: 45_000, workerCpuUs: 34, brokerCpuUs: 14, redisBusy: 0.63 }], failures: [] },
  { case: byKey('redis.W5.kq.c100'), runs: [{ kind: 'memory', idleMiB: 74.4, peakMiB: 130.2, workerCpuUs: 33 }, { kind: 'memory', idleMiB: 75.6, peakMiB: 128, workerCpuUs: 35 }], failures: [] },
  { case: byKey('redis.W5.python-celery.prefork'), runs: [{ kind: 'memory', idleMiB: 120, peakMiB: 121, workerCpuUs: 400 }], failures: [] },
  latency('redis.W6.kq', 0.9, 11.4),
  { case: byKey('amqp.W2.kq.c100'), runs: [{ kind: 'rate', perSecond: 22_000, workerCpuUs: 36, brokerCpuUs: 41 }], failures: [] },
  { case: byKey('amqp.W2.celery-node'), runs: [{ kind: 'rate', perSecond: 26_000, workerCpuUs: 31, brokerCpuUs: 38 }], failures: [] },
  { case: byKey('amqp.W2.raw-amqplib.celery'), runs: [{ kind: 'rate', perSecond: 24_000, workerCpuUs: 17, brokerCpuUs: 40 }], failures: [] },
];

const machine: MachineInfo = {
  date: '2026-01-01T00:00:00Z',
  cpu: 'Test CPU',
  cores: 2,
  memory: '8.0 GiB',
  os: 'Linux',
  node: 'v20.0.0',
  redis: '7.0.15',
  rabbitmq: '3.10.8',
  postgres: '15.19',
  python: 'Python 3.11.2, celery 5.2.6, kombu 5.2.4',
  kq: 'abc1234',
  packages: { bullmq: '6.7.0' },
  loadBefore: '0.10 / 0.20 / 0.30',
  loadAfter: '1.00 / 0.50 / 0.40',
};

describe('checkTargets', () => {
  const checks = checkTargets(outcomes);
  const find = (text: string) => checks.find((check) => check.goal.includes(text));

  it('states issue #22’s goals, each with its ratio', () => {
    expect(find('kq ≥ 1.5× bee-queue at concurrency 100')).toMatchObject({ met: false });
    expect(find('kq ≥ 1.5× bee-queue at concurrency 100')?.measured).toContain('1.20×');
    expect(find('kq ≥ 3× BullMQ at concurrency 100')).toMatchObject({ met: true });
    expect(find('kq ≥ bee-queue at concurrency 1')?.measured).toContain('1.67×'); // 10 000 vs the median of 5 000 and 7 000
    expect(find('awaited ≥ 0.9× raw ioredis')?.measured).toContain('0.94×'); // medians: 16 000 vs 17 000
    expect(find('awaited ≥ 0.9× raw ioredis')).toMatchObject({ met: true });
    expect(find('bulk ≥ bee-queue saveAll')).toMatchObject({ met: false });
    expect(find('bulk ≥ 0.6× raw ioredis')).toMatchObject({ met: true });
    expect(find('p50 ≤ bee-queue p50')).toMatchObject({ met: true });
    expect(find('p99 ≤ 3 ms')).toMatchObject({ met: true });
  });

  it('explains an unmet goal with the costs the run measured: worker CPU, Redis per command, bytes per task', () => {
    const why = find('kq ≥ 1.5× bee-queue at concurrency 100')?.why ?? '';
    expect(why).toContain('worker CPU per task: kq 31.3 µs, bee-queue, concurrency 100 20.0 µs');
    expect(why).toContain('1.5× would need ≤ 13.3 µs per task');
    expect(why).toContain('kq 12.5 µs (evalsha 8.2 µs × 1.01, hdel 1.1 µs × 1.00)');
    expect(why).toContain('bytes per task in Redis: kq 1010');
    expect(why).toContain('bee-queue, concurrency 100 52');
    expect(find('bulk ≥ bee-queue saveAll')?.why).toContain('bytes per task: kq 1010, bee-queue, saveAll(1000) 52');
    expect(find('bulk ≥ bee-queue saveAll')?.why).toContain('producer CPU per task: kq 9.5 µs, bee-queue, saveAll(1000) 5.3 µs');
    expect(find('3× BullMQ')?.why).toBeUndefined();
  });

  it('reports a target whose cases did not run as unknown, not as missed', () => {
    expect(find('raw amqplib awaited with confirms')).toMatchObject({ met: null });
    expect(find('rpc:// p50')).toMatchObject({ met: null });
  });

  it('explains the RabbitMQ drain with the broker’s CPU per task and the raw consumer of the same messages', () => {
    const check = find('1.5× celery.node');
    expect(check).toMatchObject({ met: false });
    expect(check?.why).toContain('RabbitMQ CPU per task: kq 41.0 µs, celery.node (acks on receipt) 38.0 µs');
    expect(check?.why).toContain('reaches 24,000/s, 0.92× celery.node (acks on receipt); kq runs at 0.92× of it');
    expect(check?.why).toContain('even without a worker, consuming these messages stays below 1.5×');
  });
});

describe('commandMix', () => {
  it('lists the commands that cost Redis most per task, dropping the negligible', () => {
    expect(commandMix(kqDrainCommands)).toBe('evalsha 8.2 µs × 1.01, hdel 1.1 µs × 1.00');
    // a call shared by many tasks (a batched claim, a bulk LPUSH) reads as one in how many
    expect(commandMix({ evalsha: { calls: 1 / 34, usec: 14.6 }, lpush: { calls: 0.001, usec: 1.1 } })).toBe('evalsha 14.6 µs × 1/34, lpush 1.1 µs × 1/1000');
    expect(commandMix(null)).toBe('not measured');
  });
});

describe('renderMarkdown', () => {
  const markdown = renderMarkdown({ outcomes, machine, command: 'pnpm bench', n: 20_000, roundTrips: 1000, runs: 3, durationS: 600, chartFile: 'results.svg' });

  it('has a table per workload with median, min, max and kq’s ratio to each row', () => {
    expect(markdown).toContain('### W1 enqueue');
    expect(markdown).toContain('| bee-queue, awaited | 10,000 | 9,000 | 11,000 | 1.60× |');
    expect(markdown).toContain('| bee-queue, concurrency 100 | 50,000 | 50,000 | 50,000 | 1.20× | 0.20× | 20.0 | 3.0 | — |');
    // Drains show the worker's and Redis's CPU per task where they were measured.
    expect(markdown).toContain('| worker CPU µs/task | Redis CPU µs/task |');
    expect(markdown).toMatch(/\| \*\*kq, concurrency 100\*\* \| 60,000 .*\| 31\.3 \| 12\.5 \| 72 \/ 118 \|/);
    // ... and the worker's resident memory waiting for work and at its peak; rows that did not measure it say so.
    expect(markdown).toContain('| worker RSS MiB idle / peak |');
    expect(markdown).toMatch(/\| bee-queue \| 0\.400 \| .* \| 1\.14× \| 0\.44× \|/);
  });

  it('states what tracing costs: the traced drain against the same drain without an SDK', () => {
    expect(markdown).toContain('no SDK: the plain row) against no API at all costs 0.5 µs of worker CPU per task and runs the drain at 0.98× the API-less rate.');
    expect(markdown).toContain('exporter that drops them) costs 8.5 µs of worker CPU per task and runs the drain at 0.80× the untraced rate.');
    // the traced row is not the reference the other rows are compared with
    expect(markdown).toContain('| bee-queue, concurrency 100 | 50,000 | 50,000 | 50,000 | 1.20× | 0.20× |');
  });

  it('shows issue #22’s targets and, under them, why each unmet one is not met', () => {
    expect(markdown).toContain('## Targets (issues #22, #31 and #35)');
    expect(markdown).toMatch(/\| W2 drain, Redis, acks late: kq ≥ 1\.5× bee-queue at concurrency 100 \| .*\*\*1\.20×\*\* \| \*\*no\*\* \|/);
    expect(markdown).toContain('- **W2 drain, Redis, acks late: kq ≥ 1.5× bee-queue at concurrency 100**: worker CPU per task');
    expect(markdown).not.toContain('issue #8');
  });

  it('checks issue #31’s Redis goals: Redis and worker CPU per task, the c1 ratio, Redis per round trip, two processes', () => {
    const hot = new Map(redisHotPathTargets(outcomes).map((check) => [check.goal, check]));
    expect(hot.get('W2 drain, Redis: Redis CPU per task (kq, concurrency 100) ≤ 6 µs')).toEqual({
      goal: 'W2 drain, Redis: Redis CPU per task (kq, concurrency 100) ≤ 6 µs',
      measured: 'kq 12.5 µs (bee-queue, concurrency 100: 3.0 µs — the stretch goal, ≤ bee-queue\'s, not met)',
      met: false,
    });
    // bee-queue at concurrency 1: 6,000/s (the median of its two runs)
    expect(hot.get('W2 drain, Redis: kq ≥ 2× bee-queue at concurrency 1')?.met).toBe(false);
    expect(hot.get('W4 scale, Redis: kq 2 processes ≥ 1.3× one')).toMatchObject({ met: true, measured: expect.stringContaining('**1.50×**') });
    expect(hot.get('W2 drain, Redis: worker CPU per task (kq, concurrency 100) ≤ 35 µs')).toMatchObject({ met: true, measured: 'kq 31.3 µs' });
    // W3's Redis commands were not measured in these outcomes; BullMQ's drain measured no memory
    expect(hot.get('W3 round trip, Redis: Redis per round trip ≤ 50 µs')?.met).toBeNull();
    expect(hot.get("W2 drain, Redis: kq's peak RSS ≤ BullMQ's (concurrency 100)")?.met).toBeNull();
    expect(markdown).toContain('| W4 scale, Redis: kq 2 processes ≥ 1.3× one |');
  });

  it('shows the redis-server process’s CPU beside Redis’s command time when the runs measured it, and in the #31 goals', () => {
    const measured: CaseOutcome[] = [
      { case: byKey('redis.W2.kq.c100'), runs: [{ kind: 'rate', perSecond: 60_000, workerCpuUs: 31.25, brokerCpuUs: 12.5, redisProcessCpuUs: 9.5 }], failures: [] },
      { case: byKey('redis.W2.bee-queue.c100'), runs: [{ kind: 'rate', perSecond: 50_000, workerCpuUs: 20, brokerCpuUs: 3, redisProcessCpuUs: 7.25 }], failures: [] },
      { case: byKey('redis.W3.kq'), runs: [{ kind: 'latency', p50: 0.35, p99: 2.5, redisCommands: { evalsha: { calls: 1, usec: 60 } }, redisProcessCpuUs: 80 }], failures: [] },
      { case: byKey('redis.W3.bee-queue'), runs: [{ kind: 'latency', p50: 0.4, p99: 1.1, redisProcessCpuUs: 40 }], failures: [] },
    ];
    const text = renderMarkdown({ outcomes: measured, machine, command: 'pnpm bench', n: 20_000, roundTrips: 1000, runs: 3, durationS: 600, chartFile: 'results.svg' });
    expect(text).toContain('| worker CPU µs/task | Redis CPU µs/task | Redis process CPU µs/task | worker RSS MiB idle / peak |');
    expect(text).toMatch(/\| \*\*kq, concurrency 100\*\* \| 60,000 .*\| 31\.3 \| 12\.5 \| 9\.5 \| — \|/);
    const hot = new Map(redisHotPathTargets(measured).map((check) => [check.goal, check]));
    expect(hot.get('W2 drain, Redis: Redis CPU per task (kq, concurrency 100) ≤ 6 µs')?.measured).toContain('redis-server process CPU: kq 9.5 µs, bee-queue 7.3 µs');
    expect(hot.get('W3 round trip, Redis: Redis per round trip ≤ 50 µs')).toMatchObject({
      met: false,
      measured: 'kq 60.0 µs; redis-server process CPU: kq 80.0 µs, bee-queue 40.0 µs',
    });
    // Without the process's CPU (another host), the tables keep their columns as they were.
    expect(markdown).not.toContain('Redis process CPU');
  });

  it('shows the producer’s CPU and the bytes per task in Redis next to W1’s rates', () => {
    expect(markdown).toContain('| system | tasks/s (median) | min | max | kq × | producer CPU µs/task | bytes/task in Redis |');
    expect(markdown).toContain('| bee-queue, saveAll(1000) | 140,000 | 140,000 | 140,000 | 0.64× | 5.3 | 52 |');
  });

  it('names the broker whose CPU the drain table shows', () => {
    expect(markdown).toContain('| worker CPU µs/task | RabbitMQ CPU µs/task | worker RSS MiB idle / peak |');
    expect(markdown).toMatch(/\| \*\*kq, concurrency 100\*\* \| 22,000 .*\| 36\.0 \| 41\.0 \| — \|/);
  });

  it('has the scale, memory and under-load tables', () => {
    expect(markdown).toContain('### W4 scale');
    expect(markdown).toContain('| **kq, 2 processes × concurrency 100** | 45,000 | 45,000 | 45,000 | 1.50× | 34.0 | 14.0 | 63 % | 71,429 |');
    expect(markdown).toContain('### W5 memory');
    expect(markdown).toContain('| **kq, concurrency 100** | 75 | 74–76 | 129 | 128–130 | 34.0 |');
    expect(markdown).toContain('| Python Celery, prefork ×2 | 120 | 120–120 | 121 | 121–121 | 400 |');
    expect(markdown).toContain('### W6 round trip under load');
    expect(markdown).toMatch(/\| \*\*kq, concurrency 100, 5,000 tasks\/s of load\*\* \| 0\.900 \|/);
  });

  it('keeps the runs that passed of a case where one failed, and says so', () => {
    expect(markdown).toContain('| bee-queue, concurrency 1 (1 of 3 runs failed) | 6,000 | 5,000 | 7,000 |');
    expect(markdown).toContain('exited with code 1 before reporting a result');
  });

  it('lists failed runs with their reason, the machine and the command', () => {
    expect(markdown).toContain('## Failed runs');
    expect(markdown).toContain('the worker becoming ready did not happen');
    expect(markdown).toContain('| BullMQ | failed |');
    expect(markdown).toContain('| CPU | Test CPU, 2 logical cores |');
    expect(markdown).toContain('`pnpm bench`');
    expect(markdown).toContain('![Chart of the medians](results.svg)');
  });
});

describe('renderSvg', () => {
  const svg = renderSvg(outcomes, 'test machine');

  it('is one SVG document with a bar per measured row and kq highlighted', () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trim().endsWith('</svg>')).toBe(true);
    // W1–W3 only (the chart has no panel for scale, memory, under load); the case with no passing run has no bar
    const charted = outcomes.filter((o) => ['W1', 'W2', 'W3'].includes(o.case.workload));
    expect(svg.match(/<rect x="330"/g)?.length).toBe(charted.length - 1);
    expect(svg).toContain('6,000/s (1 of 3 runs failed)');
    expect(svg).toContain('class="label kq">kq, concurrency 100<');
    expect(svg).toContain('>failed<');
  });

  it('escapes text', () => {
    expect(renderSvg(outcomes, 'a < b & "c"')).toContain('a &lt; b &amp; &quot;c&quot;');
  });
});
