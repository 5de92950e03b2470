// Summaries of repeated runs and of latency samples.

export interface Summary {
  median: number;
  min: number;
  max: number;
}

/** Median (the mean of the two middle values for an even count), min and max. */
export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) throw new Error('Cannot summarize zero runs.');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
  return { median, min: sorted[0] as number, max: sorted[sorted.length - 1] as number };
}

/** The p-th percentile (0 < p ≤ 100) by the nearest-rank method: the smallest sample with ≥ p% of samples at or below it. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new Error('Cannot take a percentile of zero samples.');
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] as number;
}
