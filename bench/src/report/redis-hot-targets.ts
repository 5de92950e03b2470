// The goals issue #31 (the Redis hot path) sets beyond issue #22's, read from one run's outcomes: Redis's work per
// task and per round trip, the single worker's CPU and memory, and what a second worker process adds. Reported,
// never asserted. The worker's socket writes per round trip are not measured by the suite (bench/PROFILE-redis.md).
import { figures, type CaseFigures, type CaseOutcome } from '../outcome';
import type { TargetCheck } from './targets';

function figuresOf(outcomes: readonly CaseOutcome[], key: string): { label: string; f: CaseFigures } | null {
  const outcome = outcomes.find((candidate) => candidate.case.key === key);
  const f = outcome ? figures(outcome) : null;
  return outcome && f ? { label: outcome.case.label, f } : null;
}

function rate(f: CaseFigures | undefined): number | null {
  return f && (f.kind === 'rate' || f.kind === 'scale') ? f.rate.median : null;
}

/**
 * Redis's command time per task (per round trip in W3: the sum of its commands, as the W3 table's notes give it) —
 * the goals' definition; the process's CPU is reported beside it.
 */
function redisPerTask(f: CaseFigures | undefined): number | null {
  if (f?.kind === 'latency') return f.redisCommands ? Object.values(f.redisCommands).reduce((sum, stat) => sum + stat.usec, 0) : null;
  return f && f.kind !== 'memory' ? (f.brokerCpuUs?.median ?? null) : null;
}

/** The redis-server process's CPU per task (per round trip in W3), from /proc: shown beside the command time. */
function redisProcessPerTask(f: CaseFigures | undefined): number | null {
  return f && (f.kind === 'rate' || f.kind === 'latency') ? (f.redisProcessCpuUs?.median ?? null) : null;
}

const us = (value: number): string => (value >= 100 ? value.toFixed(0) : value.toFixed(1));

/** A measured value against a ceiling; null when the case is missing or did not measure it. */
function atMost(goal: string, label: string, value: number | null, ceiling: number, unit: string, extra = ''): TargetCheck {
  if (value === null) return { goal, measured: 'not measured', met: null };
  return { goal, measured: `${label} ${us(value)} ${unit}${extra}`, met: value <= ceiling };
}

function ratio(goal: string, a: { label: string; f: CaseFigures } | null, b: { label: string; f: CaseFigures } | null, atLeast: number): TargetCheck {
  const ra = rate(a?.f);
  const rb = rate(b?.f);
  if (!a || !b || ra === null || rb === null) return { goal, measured: 'not measured', met: null };
  const format = (value: number): string => `${Math.round(value).toLocaleString('en-US')}/s`;
  return { goal, measured: `${a.label} ${format(ra)} vs ${b.label} ${format(rb)}: **${(ra / rb).toFixed(2)}×**`, met: ra / rb >= atLeast };
}

export function redisHotPathTargets(outcomes: readonly CaseOutcome[]): TargetCheck[] {
  const kq100 = figuresOf(outcomes, 'redis.W2.kq.c100');
  const kq1 = figuresOf(outcomes, 'redis.W2.kq.c1');
  const bee100 = figuresOf(outcomes, 'redis.W2.bee-queue.c100');
  const bee1 = figuresOf(outcomes, 'redis.W2.bee-queue.c1');
  const bull100 = figuresOf(outcomes, 'redis.W2.bullmq.c100');
  const kqTrip = figuresOf(outcomes, 'redis.W3.kq');
  const beeRedis = redisPerTask(bee100?.f);
  const kqRedis = redisPerTask(kq100?.f);
  const kqWorker = kq100?.f.kind === 'rate' ? (kq100.f.workerCpuUs?.median ?? null) : null;
  const peak = (found: typeof kq100): number | null => (found?.f.kind === 'rate' ? (found.f.rssPeakMiB?.median ?? null) : null);
  const kqPeak = peak(kq100);
  const processNote = (kq: number | null, other: number | null, otherLabel: string): string =>
    kq === null ? '' : `; redis-server process CPU: kq ${us(kq)} µs${other === null ? '' : `, ${otherLabel} ${us(other)} µs`}`;
  const beeTrip = figuresOf(outcomes, 'redis.W3.bee-queue');
  const bullPeak = peak(bull100);
  return [
    atMost(
      'W2 drain, Redis: Redis CPU per task (kq, concurrency 100) ≤ 6 µs',
      'kq',
      kqRedis,
      6,
      'µs',
      (beeRedis === null ? '' : ` (bee-queue, concurrency 100: ${us(beeRedis)} µs — the stretch goal, ≤ bee-queue's, ${kqRedis !== null && kqRedis <= beeRedis ? 'met' : 'not met'})`) +
        processNote(redisProcessPerTask(kq100?.f), redisProcessPerTask(bee100?.f), 'bee-queue'),
    ),
    ratio('W2 drain, Redis: kq ≥ 2× bee-queue at concurrency 1', kq1, bee1, 2),
    atMost(
      'W3 round trip, Redis: Redis per round trip ≤ 50 µs',
      'kq',
      redisPerTask(kqTrip?.f),
      50,
      'µs',
      processNote(redisProcessPerTask(kqTrip?.f), redisProcessPerTask(beeTrip?.f), 'bee-queue'),
    ),
    ratio('W4 scale, Redis: kq 2 processes ≥ 1.3× one', figuresOf(outcomes, 'redis.W4.kq.p2'), figuresOf(outcomes, 'redis.W4.kq.p1'), 1.3),
    atMost('W2 drain, Redis: worker CPU per task (kq, concurrency 100) ≤ 35 µs', 'kq', kqWorker, 35, 'µs'),
    kqPeak === null || bullPeak === null
      ? { goal: "W2 drain, Redis: kq's peak RSS ≤ BullMQ's (concurrency 100)", measured: 'not measured', met: null }
      : { goal: "W2 drain, Redis: kq's peak RSS ≤ BullMQ's (concurrency 100)", measured: `kq ${kqPeak.toFixed(0)} MiB vs BullMQ ${bullPeak.toFixed(0)} MiB`, met: kqPeak <= bullPeak },
  ];
}
