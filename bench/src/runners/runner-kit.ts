// The child side of the protocol: read the job, report readiness and the result, and never outlive the orchestrator.
import {
  GO_LINE,
  STOP_LINE,
  READY_LINE,
  RESULT_PREFIX,
  SPEC_ENV,
  type DrainResult,
  type RoundTripResult,
  type RunnerResult,
  type RunnerSpec,
} from '../protocol';

export function readSpec(): RunnerSpec {
  const text = process.env[SPEC_ENV];
  if (!text) throw new Error(`${SPEC_ENV} is not set: runners are started by bench/src/main.ts, not by hand.`);
  return JSON.parse(text) as RunnerSpec;
}

export function announceReady(): void {
  process.stdout.write(`${READY_LINE}\n`);
}

export function report(result: RunnerResult): void {
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}

let progress: (() => string) | undefined;
let releaseGo: () => void = () => undefined;
const goSignal = new Promise<void>((resolve) => (releaseGo = resolve));
let releaseStop: () => void = () => undefined;
const stopSignal = new Promise<void>((resolve) => (releaseStop = resolve));

/** Resolves when the orchestrator says `GO` (drain and round-trip runners wait for it before their timed part). */
export function awaitGo(): Promise<void> {
  return goSignal;
}

/** Resolves when the orchestrator says `STOP` (a shared drain: the broker holds nothing more). */
export function awaitStop(): Promise<void> {
  return stopSignal;
}

/**
 * A drain's end: for a drain of its own, when every index completed; for one of several processes on one queue
 * (`spec.shared`), when the orchestrator says STOP.
 */
export function drainDone(spec: RunnerSpec, tracker: CompletionTracker): Promise<void> {
  return spec.shared === true ? awaitStop() : tracker.done;
}

/** What the runner has done so far, for the message when it times out ("19 990 of 20 000 acked"). */
export function describeProgressWith(describe: () => string): void {
  progress = describe;
}

/**
 * Runs a runner's main function: exits 0 after it returns, 1 with the error on stderr when it throws or when the
 * spec's timeout passes, and at once when the orchestrator goes away (its end of our stdin closes), so a killed
 * benchmark never leaves workers behind.
 */
export function runMain(main: (spec: RunnerSpec) => Promise<void>): void {
  const spec = readSpec();
  const deadline = setTimeout(() => {
    const where = progress ? `: ${progress()}` : '';
    process.stderr.write(`runner ${process.argv[1] ?? ''} (${spec.role}) gave up after ${spec.timeoutMs} ms${where}\n`);
    process.exit(1);
  }, spec.timeoutMs);
  deadline.unref();
  let input = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    input += chunk;
    const lines = input.split('\n');
    if (lines.includes(GO_LINE)) {
      deadline.refresh(); // the time limit is for the work, not for waiting to begin
      releaseGo();
    }
    if (lines.includes(STOP_LINE)) releaseStop();
  });
  // A normal exit on SIGTERM (the orchestrator stopping a serving worker), so `--cpu-prof` still writes its profile.
  process.once('SIGTERM', () => process.exit(143));
  process.stdin.on('end', () => process.exit(2));
  process.stdin.on('error', () => process.exit(2));
  main(spec).then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}

/** Counts task completions by index: how many ran, how many distinct, and when the last of n arrived. */
export class CompletionTracker {
  readonly #seen: Uint8Array;
  #processed = 0;
  #distinct = 0;
  #resolve: () => void = () => undefined;
  readonly done: Promise<void>;
  /** Made right after GO, as every drain runner does: the CPU its drain costs is counted from here. */
  readonly #cpuStart = process.cpuUsage();

  constructor(readonly n: number) {
    this.#seen = new Uint8Array(n);
    this.done = new Promise((resolve) => (this.#resolve = resolve));
    if (n === 0) this.#resolve();
    describeProgressWith(() => `${this.#distinct} of ${this.n} tasks completed (${this.#processed} runs)`);
  }

  /** Records that task `index` completed (acked). Unknown indexes count as processed but never as distinct. */
  complete(index: unknown): void {
    this.#processed++;
    if (typeof index === 'number' && Number.isInteger(index) && index >= 0 && index < this.n && this.#seen[index] === 0) {
      this.#seen[index] = 1;
      if (++this.#distinct === this.n) this.#resolve();
    }
  }

  get processed(): number {
    return this.#processed;
  }

  get distinct(): number {
    return this.#distinct;
  }

  /** `shared`: include the completed indexes, for the orchestrator to merge with the other processes'. */
  result(elapsedMs: number, shared = false): DrainResult {
    const cpu = process.cpuUsage(this.#cpuStart);
    const result: DrainResult = { kind: 'drain', elapsedMs, processed: this.#processed, distinct: this.#distinct, cpuUs: cpu.user + cpu.system };
    if (shared) result.seen = Buffer.from(packBits(this.#seen)).toString('base64');
    return result;
  }
}

/** CPU (user + system) this process used since `start` (a `process.cpuUsage()` reading), µs. */
export function cpuSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

/** Milliseconds since `start` (a `performance.now()` reading). */
export function since(start: number): number {
  return performance.now() - start;
}

/** One round trip that takes this long is a lost task or result, not a slow one. */
const ROUND_TRIP_TIMEOUT_MS = 30_000;

/**
 * The round-trip loop every system shares: `n` times, time `once(i)` (publish task i, await its result) and check
 * that the result is i.
 */
export async function measureRoundTrips(n: number, once: (index: number) => Promise<unknown>): Promise<RoundTripResult> {
  const latenciesMs: number[] = [];
  let wrong = 0;
  describeProgressWith(() => `${latenciesMs.length} of ${n} round trips done`);
  for (let index = 0; index < n; index++) {
    const start = performance.now();
    const value = await within(once(index), ROUND_TRIP_TIMEOUT_MS, `round trip ${index + 1} of ${n} (no result came back)`);
    latenciesMs.push(performance.now() - start);
    if (value !== index) wrong++;
  }
  return { kind: 'roundtrip', latenciesMs, wrong };
}

/** Publishes `n` items in batches of `batch` in flight at once, awaiting each batch (the bulk way without a bulk API). */
export async function inFlightBatches(n: number, batch: number, publish: (index: number) => Promise<unknown>): Promise<void> {
  for (let at = 0; at < n; at += batch) {
    const pending: Array<Promise<unknown>> = [];
    for (let index = at; index < Math.min(n, at + batch); index++) pending.push(publish(index));
    await Promise.all(pending);
  }
}

/** Rejects with a clear message when `promise` does not settle within `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** One bit per index (bit i of byte i >> 3 is index i): how a shared drain reports what it completed. */
export function packBits(flags: Uint8Array): Uint8Array {
  const bits = new Uint8Array(Math.ceil(flags.length / 8));
  for (let index = 0; index < flags.length; index++) if (flags[index] !== 0) bits[index >> 3] = (bits[index >> 3] ?? 0) | (1 << (index & 7));
  return bits;
}

/**
 * The background traffic of a round trip under load: `publish(indexes)` with `ratePerSecond / 100` tasks every 10 ms
 * (a small bulk batch, so publishing stays cheap next to the round trips), until the process is stopped. Indexes
 * start at `from`, clear of the round trips' own.
 */
export async function publishSteadily(ratePerSecond: number, from: number, publish: (indexes: number[]) => Promise<unknown>): Promise<never> {
  const perTick = Math.max(1, Math.round(ratePerSecond / 100));
  const started = performance.now();
  let next = from;
  for (let tick = 1; ; tick++) {
    const indexes = Array.from({ length: perTick }, () => next++);
    await publish(indexes);
    // Ticks are paced from the start, so a slow publish is caught up instead of lowering the rate.
    const wait = started + tick * 10 - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
}
