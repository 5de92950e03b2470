/** One second of finished tasks: how many succeeded and failed, and their runtimes (for percentiles). */
interface SecondBucket {
  second: number;
  succeeded: number;
  failed: number;
  runtimes: number[];
}

/** What a chart shows for one second. */
export interface ThroughputPoint {
  /** Epoch seconds. */
  t: number;
  succeeded: number;
  failed: number;
  /** Runtime percentiles of the tasks that finished in that second, seconds (null when none did). */
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

/** Runtimes kept per second: enough for p99 without letting a flood of tasks grow a bucket without bound. */
const RUNTIMES_PER_SECOND = 1000;

/**
 * Finished tasks per second over the last `seconds`, in a ring of per-second buckets: constant memory and constant
 * work per event whatever the rate (no array that shifts as time moves on).
 */
export class ThroughputSeries {
  readonly seconds: number;
  readonly #ring: SecondBucket[];

  constructor(seconds = 600) {
    this.seconds = seconds;
    this.#ring = Array.from({ length: seconds }, () => ({ second: -1, succeeded: 0, failed: 0, runtimes: [] }));
  }

  record(state: 'succeeded' | 'failed', atSeconds: number, runtime: number | null): void {
    const bucket = this.#bucket(Math.floor(atSeconds));
    bucket[state]++;
    if (runtime !== null && Number.isFinite(runtime) && bucket.runtimes.length < RUNTIMES_PER_SECOND) bucket.runtimes.push(runtime);
  }

  /** Every second from `now - seconds + 1` to `now`, oldest first (empty seconds as zeros). */
  points(nowSeconds: number = Date.now() / 1000, seconds: number = this.seconds): ThroughputPoint[] {
    const now = Math.floor(nowSeconds);
    const span = Math.min(seconds, this.seconds);
    const points: ThroughputPoint[] = [];
    for (let t = now - span + 1; t <= now; t++) {
      const bucket = this.#ring[((t % this.seconds) + this.seconds) % this.seconds] as SecondBucket;
      if (bucket.second !== t) {
        points.push({ t, succeeded: 0, failed: 0, p50: null, p95: null, p99: null });
        continue;
      }
      const sorted = [...bucket.runtimes].sort((a, b) => a - b);
      points.push({ t, succeeded: bucket.succeeded, failed: bucket.failed, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), p99: percentile(sorted, 0.99) });
    }
    return points;
  }

  #bucket(second: number): SecondBucket {
    const bucket = this.#ring[((second % this.seconds) + this.seconds) % this.seconds] as SecondBucket;
    if (bucket.second !== second) {
      bucket.second = second;
      bucket.succeeded = 0;
      bucket.failed = 0;
      bucket.runtimes = [];
    }
    return bucket;
  }
}

/** The value below which `q` of the sorted values fall (nearest rank); null for no values. */
export function percentile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

/** Queue lengths sampled over time: a bounded ring of samples, oldest dropped first. */
export class QueueLengthSeries {
  readonly capacity: number;
  readonly #samples: Array<{ t: number; lengths: Readonly<Record<string, number>> } | undefined>;
  #next = 0;
  #count = 0;

  constructor(capacity = 360) {
    this.capacity = capacity;
    this.#samples = new Array(capacity);
  }

  record(atSeconds: number, lengths: Readonly<Record<string, number>>): void {
    this.#samples[this.#next] = { t: atSeconds, lengths };
    this.#next = (this.#next + 1) % this.capacity;
    this.#count = Math.min(this.capacity, this.#count + 1);
  }

  /** Samples, oldest first. */
  samples(): Array<{ t: number; lengths: Readonly<Record<string, number>> }> {
    const out = [];
    for (let i = 0; i < this.#count; i++) {
      const sample = this.#samples[(this.#next - this.#count + i + this.capacity) % this.capacity];
      if (sample) out.push(sample);
    }
    return out;
  }

  latest(): Readonly<Record<string, number>> {
    return this.samples().at(-1)?.lengths ?? {};
  }
}
