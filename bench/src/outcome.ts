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
  | { kind: 'rate'; rate: Summary; workerCpuUs: Summary | null; redisCpuUs: Summary | null; rssIdleMiB: Summary | null; rssPeakMiB: Summary | null }
  | { kind: 'latency'; p50: Summary; p99: Summary };

export function figures(outcome: CaseOutcome): CaseFigures | null {
  if (outcome.runs.length === 0) return null;
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
      if (run.redisCpuUs !== undefined) redisCpu.push(run.redisCpuUs);
      if (run.rssIdleMiB !== undefined) rssIdle.push(run.rssIdleMiB);
      if (run.rssPeakMiB !== undefined) rssPeak.push(run.rssPeakMiB);
    } else {
      p50s.push(run.p50);
      p99s.push(run.p99);
    }
  }
  if (rates.length > 0) {
    return {
      kind: 'rate',
      rate: summarize(rates),
      workerCpuUs: workerCpu.length > 0 ? summarize(workerCpu) : null,
      redisCpuUs: redisCpu.length > 0 ? summarize(redisCpu) : null,
      rssIdleMiB: rssIdle.length > 0 ? summarize(rssIdle) : null,
      rssPeakMiB: rssPeak.length > 0 ? summarize(rssPeak) : null,
    };
  }
  return { kind: 'latency', p50: summarize(p50s), p99: summarize(p99s) };
}

/** The headline median: tasks/s for rates, p50 ms for latencies. */
export function headline(outcome: CaseOutcome): number | null {
  const f = figures(outcome);
  if (!f) return null;
  return f.kind === 'rate' ? f.rate.median : f.p50.median;
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
