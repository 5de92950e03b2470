import { describe, expect, it } from 'vitest';
import { allCases, type BenchCase } from '../src/cases';
import type { MachineInfo } from '../src/machine-info';
import type { CaseOutcome } from '../src/outcome';
import { renderMarkdown } from '../src/report/markdown';
import { renderSvg } from '../src/report/svg';
import { checkTargets } from '../src/report/targets';

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

const outcomes: CaseOutcome[] = [
  rate('redis.W1.kq.awaited', 15_000, 16_000, 17_000),
  rate('redis.W1.bee-queue.awaited', 9_000, 10_000, 11_000),
  rate('redis.W1.kq.bulk', 90_000),
  rate('redis.W1.bullmq.bulk', 100_000),
  { case: byKey('redis.W2.kq.c100'), runs: [{ kind: 'rate', perSecond: 60_000, workerCpuUs: 31.25, redisCpuUs: 12.5, rssIdleMiB: 71.6, rssPeakMiB: 118.2 }], failures: [] },
  rate('redis.W2.kq.c1', 10_000),
  { case: byKey('redis.W2.kq.c100.traced'), runs: [{ kind: 'rate', perSecond: 48_000, workerCpuUs: 39.75, redisCpuUs: 12.5 }], failures: [] },
  { case: byKey('redis.W2.kq.c100.untraced'), runs: [{ kind: 'rate', perSecond: 61_000, workerCpuUs: 30.75, redisCpuUs: 12.5 }], failures: [] },
  rate('redis.W2.bee-queue.c100', 25_000),
  { ...rate('redis.W2.bee-queue.c1', 5_000, 7_000), failures: ['bee-queue, concurrency 1 [drain, redis] exited with code 1 before reporting a result.'] },
  rate('redis.W2.bullmq.c100', 20_000),
  rate('redis.W2.python-celery.solo', 1_300),
  latency('redis.W3.kq', 0.35, 2.5),
  latency('redis.W3.bee-queue', 0.4, 1.1),
  { case: byKey('redis.W3.bullmq'), runs: [], failures: ['BullMQ [serve, redis]: the worker becoming ready did not happen within 30 s.'] },
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

  it('compares kq at concurrency 100 with the fastest peer and with each named peer', () => {
    expect(find('2× the fastest peer')).toMatchObject({ met: true });
    expect(find('2× the fastest peer')?.measured).toContain('2.40×');
    expect(find('3× BullMQ')).toMatchObject({ met: true });
    expect(find('10× Python Celery')).toMatchObject({ met: true });
  });

  it('takes medians: awaited enqueue 16 000/s vs 10 000/s is 1.6×', () => {
    expect(find('awaited ≥ 1.5×')?.measured).toContain('1.60×');
    expect(find('bulk ≥ the fastest peer bulk')).toMatchObject({ met: false });
  });

  it('checks the round-trip p50 against the fastest peer that finished, and p99 against 3 ms', () => {
    expect(find('p50 ≤ the fastest peer p50')).toMatchObject({ met: true });
    expect(find('p99 ≤ 3 ms')).toMatchObject({ met: true });
  });

  it('reports a target whose cases did not run as unknown, not as missed', () => {
    expect(find('raw amqplib')).toMatchObject({ met: null });
  });
});

describe('renderMarkdown', () => {
  const markdown = renderMarkdown({ outcomes, machine, command: 'pnpm bench', n: 20_000, roundTrips: 1000, runs: 3, durationS: 600, chartFile: 'results.svg' });

  it('has a table per workload with median, min, max and kq’s ratio to each row', () => {
    expect(markdown).toContain('### W1 enqueue');
    expect(markdown).toContain('| bee-queue, awaited | 10,000 | 9,000 | 11,000 | 1.60× |');
    expect(markdown).toContain('| bee-queue, concurrency 100 | 25,000 | 25,000 | 25,000 | 2.40× | 0.40× | — | — | — |');
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
    expect(markdown).toContain('| bee-queue, concurrency 100 | 25,000 | 25,000 | 25,000 | 2.40× | 0.40× | — | — | — |');
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
    expect(svg.match(/<rect x="330"/g)?.length).toBe(outcomes.length - 1); // the case with no passing run has no bar
    expect(svg).toContain('6,000/s (1 of 3 runs failed)');
    expect(svg).toContain('class="label kq">kq, concurrency 100<');
    expect(svg).toContain('>failed<');
  });

  it('escapes text', () => {
    expect(renderSvg(outcomes, 'a < b & "c"')).toContain('a &lt; b &amp; &quot;c&quot;');
  });
});
