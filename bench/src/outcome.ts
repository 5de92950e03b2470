// What the suite found for each case, and the derived numbers the reports show.
import type { BenchCase } from './cases';
import type { RunMeasurement } from './run-case';
import { summarize, type Summary } from './stats';

export interface CaseOutcome {
  case: BenchCase;
  /** Successful runs, in order. */
  runs: RunMeasurement[];
  /** Why runs failed (empty when all passed). */
  failures: string[];
  /** Runs left out on purpose (a very slow case runs once), with the reason. */
  skipped?: string;
}

/**
 * A case's headline numbers over its successful runs: throughput for W1/W2 (tasks/s), p50 and p99 for W3 (ms).
 * Null when no run succeeded. (Reports flag cases where some runs failed.)
 */
export type CaseFigures =
  | {
      kind: 'rate';
      rate: Summary;
      workerCpuUs: Summary | null;
      brokerCpuUs: Summary | null;
      rssIdleMiB: Summary | null;
      rssPeakMiB: Summary | null;
      bytesPerTask: Summary | null;
      /** Redis's calls and µs per task by command, medians over the runs. */
      redisCommands: Record<string, { calls: number; usec: number }> | null;
      /** The redis-server process's CPU per task (/proc), beside `brokerCpuUs`, its command time. */
      redisProcessCpuUs: Summary | null;
    } & PostgresFigures
  | ({
      kind: 'latency';
      p50: Summary;
      p99: Summary;
      redisCommands: Record<string, { calls: number; usec: number }> | null;
      brokerCpuUs: Summary | null;
      /** The redis-server process's CPU per round trip (/proc). */
      redisProcessCpuUs: Summary | null;
    } & PostgresFigures)
  | { kind: 'scale'; rate: Summary; workerCpuUs: Summary | null; brokerCpuUs: Summary | null; redisBusy: Summary | null }
  | ({ kind: 'memory'; idleMiB: Summary | null; peakMiB: Summary | null; workerCpuUs: Summary | null; brokerCpuUs: Summary | null } & PostgresFigures);

/** On PostgreSQL: WAL bytes and commits per task (per round trip in W3), over the runs. */
export interface PostgresFigures {
  walBytesPerTask: Summary | null;
  commitsPerTask: Summary | null;
}

function postgresFigures(runs: ReadonlyArray<{ walBytesPerTask?: number; commitsPerTask?: number }>): PostgresFigures {
  return { walBytesPerTask: summarizeSome(runs.map((run) => run.walBytesPerTask)), commitsPerTask: summarizeSome(runs.map((run) => run.commitsPerTask)) };
}

/** The median and range of the values runs have (null when none has it). */
function summarizeSome(values: ReadonlyArray<number | null | undefined>): Summary | null {
  const present = values.filter((value): value is number => value !== null && value !== undefined);
  return present.length > 0 ? summarize(present) : null;
}

export function figures(outcome: CaseOutcome): CaseFigures | null {
  if (outcome.runs.length === 0) return null;
  const scale = outcome.runs.filter((run) => run.kind === 'scale');
  if (scale.length > 0) {
    return {
      kind: 'scale',
      rate: summarize(scale.map((run) => run.perSecond)),
      workerCpuUs: summarizeSome(scale.map((run) => run.workerCpuUs)),
      brokerCpuUs: summarizeSome(scale.map((run) => run.brokerCpuUs)),
      redisBusy: summarizeSome(scale.map((run) => run.redisBusy)),
    };
  }
  const memory = outcome.runs.filter((run) => run.kind === 'memory');
  if (memory.length > 0) {
    return {
      kind: 'memory',
      idleMiB: summarizeSome(memory.map((run) => run.idleMiB)),
      peakMiB: summarizeSome(memory.map((run) => run.peakMiB)),
      workerCpuUs: summarizeSome(memory.map((run) => run.workerCpuUs)),
      brokerCpuUs: summarizeSome(memory.map((run) => run.brokerCpuUs)),
      ...postgresFigures(memory),
    };
  }
  const rates: number[] = [];
  const workerCpu: number[] = [];
  const redisCpu: number[] = [];
  const rssIdle: number[] = [];
  const rssPeak: number[] = [];
  const p50s: number[] = [];
  const p99s: number[] = [];
  for (const run of outcome.runs) {
    if (run.kind === 'rate') {
      rates.push(run.perSecond);
      if (run.workerCpuUs !== undefined) workerCpu.push(run.workerCpuUs);
      if (run.brokerCpuUs !== undefined) redisCpu.push(run.brokerCpuUs);
      if (run.rssIdleMiB !== undefined) rssIdle.push(run.rssIdleMiB);
      if (run.rssPeakMiB !== undefined) rssPeak.push(run.rssPeakMiB);
    } else if (run.kind === 'latency') {
      p50s.push(run.p50);
      p99s.push(run.p99);
    }
  }
  if (rates.length > 0) {
    const rateRuns = outcome.runs.filter((run) => run.kind === 'rate');
    return {
      kind: 'rate',
      rate: summarize(rates),
      bytesPerTask: summarizeSome(rateRuns.map((run) => run.bytesPerTask)),
      redisCommands: medianCommands(rateRuns.map((run) => run.redisCommands)),
      redisProcessCpuUs: summarizeSome(rateRuns.map((run) => run.redisProcessCpuUs)),
      workerCpuUs: workerCpu.length > 0 ? summarize(workerCpu) : null,
      brokerCpuUs: redisCpu.length > 0 ? summarize(redisCpu) : null,
      rssIdleMiB: rssIdle.length > 0 ? summarize(rssIdle) : null,
      rssPeakMiB: rssPeak.length > 0 ? summarize(rssPeak) : null,
      ...postgresFigures(rateRuns),
    };
  }
  const latencyRuns = outcome.runs.filter((run) => run.kind === 'latency');
  return {
    kind: 'latency',
    p50: summarize(p50s),
    p99: summarize(p99s),
    redisCommands: medianCommands(latencyRuns.map((run) => run.redisCommands)),
    brokerCpuUs: summarizeSome(latencyRuns.map((run) => run.brokerCpuUs)),
    redisProcessCpuUs: summarizeSome(latencyRuns.map((run) => run.redisProcessCpuUs)),
    ...postgresFigures(latencyRuns),
  };
}

function medianCommands(
  runs: ReadonlyArray<Record<string, { calls: number; usec: number }> | undefined>,
): Record<string, { calls: number; usec: number }> | null {
  const present = runs.filter((run): run is Record<string, { calls: number; usec: number }> => run !== undefined);
  if (present.length === 0) return null;
  const out: Record<string, { calls: number; usec: number }> = {};
  for (const command of new Set(present.flatMap((run) => Object.keys(run)))) {
    const of = present.map((run) => run[command] ?? { calls: 0, usec: 0 });
    out[command] = { calls: summarize(of.map((stat) => stat.calls)).median, usec: summarize(of.map((stat) => stat.usec)).median };
  }
  return out;
}

/** The headline median: tasks/s for rates and scale, p50 ms for latencies, idle MiB for memory. */
export function headline(outcome: CaseOutcome): number | null {
  const f = figures(outcome);
  if (!f) return null;
  switch (f.kind) {
    case 'rate':
    case 'scale':
      return f.rate.median;
    case 'latency':
      return f.p50.median;
    case 'memory':
      return f.idleMiB?.median ?? null;
  }
}

/**
 * How many times faster kq is than a row: throughput kq / row, latency row / kq. Above 1, kq is faster.
 * Null when either side is missing.
 */
export function speedup(kq: number | null, other: number | null, kind: 'rate' | 'latency'): number | null {
  if (kq === null || other === null || kq <= 0 || other <= 0) return null;
  return kind === 'rate' ? kq / other : other / kq;
}

/** "2 of 3 runs failed", or null when every run passed. */
export function failureNote(outcome: CaseOutcome): string | null {
  const failed = outcome.failures.length;
  if (failed === 0) return null;
  return `${failed} of ${failed + outcome.runs.length} runs failed`;
}
