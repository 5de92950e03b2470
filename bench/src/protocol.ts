// What the orchestrator (main.ts) and the runner processes (runners/*.ts, python/*.py) say to each other.
//
// The orchestrator starts a runner with the job in the KQBENCH_SPEC environment variable (JSON) and reads lines from
// its stdout: `KQBENCH_READY` once a serving worker consumes, `KQBENCH_RESULT <json>` with the measurement. Anything
// else a runner prints is kept only to explain a failure. The runner's stdin stays open while the orchestrator lives
// (a runner exits when it closes) and carries `GO` to the runners that wait for it (`drain`, `roundtrip`).

export type BrokerKind = 'redis' | 'amqp' | 'postgres';

/**
 * A runner's job:
 * - `enqueue`: publish `n` tasks, awaited one by one (`awaited`) or the system's bulk/pipelined way (`bulk`); timed.
 * - `fill`: publish `n` tasks as fast as possible (setup for a drain; not timed).
 * - `drain`: start one worker on the filled queue and time it from start to the last ack.
 * - `serve`: run a worker until killed (the other end of a round trip).
 * - `roundtrip`: `n` sequential tasks, each published and its result awaited; every latency is reported.
 * - `load`: publish `ratePerSecond` tasks a second to `loadQueue` in small bulk batches until stopped (the background
 *   traffic of a round trip under load).
 */
export type Role = 'enqueue' | 'fill' | 'drain' | 'serve' | 'roundtrip' | 'load';

export type EnqueueMode = 'awaited' | 'bulk';

export interface RunnerSpec {
  role: Role;
  broker: BrokerKind;
  /** The broker URL (Redis: the benchmark's own database). */
  url: string;
  /** Result backend URL for `serve`/`roundtrip` (null: none). */
  backend: string | null;
  /** The queue (list, BullMQ/bee-queue queue name) this case uses; the orchestrator purges it between runs. */
  queue: string;
  n: number;
  mode: EnqueueMode;
  /** Worker concurrency for `drain`/`serve`. */
  concurrency: number;
  /** Messages per batch for bulk publishing (pipeline size, tasks in flight). */
  batch: number;
  /** A system-specific flavour (raw Redis: `brpop` or `rpop-batch`). */
  variant: string | null;
  /** The runner gives up (and exits non-zero) after this long. */
  timeoutMs: number;
  /**
   * `drain`: one of several worker processes on the queue (the scale workload). It cannot tell when the queue is
   * done, so it runs until the orchestrator writes `STOP` and reports which indexes it completed (`seen`).
   */
  shared?: boolean;
  /** `serve`: also consume this queue (kept busy by a `load` runner); `load`: publish to it. */
  loadQueue?: string;
  /** `load`: tasks published per second. */
  ratePerSecond?: number;
}

export interface EnqueueResult {
  kind: 'enqueue';
  elapsedMs: number;
  published: number;
  /** CPU (user + system) the producer process used while publishing, µs. */
  cpuUs?: number;
}

export interface DrainResult {
  kind: 'drain';
  elapsedMs: number;
  /** Task bodies that ran (a redelivered task counts twice). */
  processed: number;
  /** Distinct task indexes seen; must equal n. */
  distinct: number;
  /** CPU (user + system) the worker process used while draining, µs — every thread of it. */
  cpuUs?: number;
  /** A shared drain: the indexes this process completed, a bitmap of n bits (bit i = index i), base64. */
  seen?: string;
}

export interface RoundTripResult {
  kind: 'roundtrip';
  latenciesMs: number[];
  /** Results that came back with the wrong value. */
  wrong: number;
}

export type RunnerResult = EnqueueResult | DrainResult | RoundTripResult;

export const READY_LINE = 'KQBENCH_READY';
/**
 * Written to a runner's stdin to start its timed part. Drain and round-trip runners are started early and wait for it,
 * so their start-up (Node, tsx, imports) overlaps the fill or the worker's start instead of adding to every case.
 */
export const GO_LINE = 'GO';
/** Written to a shared drain runner's stdin once the broker holds nothing queued or unacked: stop and report. */
export const STOP_LINE = 'STOP';
export const RESULT_PREFIX = 'KQBENCH_RESULT ';
/** Python workers report when they began starting (epoch ms), the drain's clock start. */
export const STARTING_PREFIX = 'KQBENCH_STARTING ';
export const SPEC_ENV = 'KQBENCH_SPEC';

/** The task every system runs: a no-op that returns its argument (the index, so losses and duplicates show). */
export const TASK_NAME = 'kqbench.noop';

/**
 * Round-trip task ids of celery.node: its amqp result backend declares a queue per task named after the id (dashes
 * removed) that lives a day; with known ids the orchestrator deletes them after the case.
 */
export function celeryNodeTaskId(index: number): string {
  return `kqbench-celery-node-${index}`;
}
