import { SoftTimeLimitExceeded } from '../errors/errors';
import type { TaskContext } from '../task/task';

/**
 * A unit of work handed to a pool: runs a task request to completion (it never rejects). A job may call `release`
 * once what needs its slot is done (the async pool: the task ran and its result is stored), so the next job starts
 * while this one's ack is still on its way; until the job ends the pool counts it (`drained`). A job that never
 * calls it holds its slot to the end. Child pools free the child when the run ends, so for them it frees nothing more.
 */
export type PoolJob = (release: () => void) => Promise<void>;

/** Where task functions run: the event loop, worker threads, or child processes (`kq worker --pool`). */
export type PoolKind = 'async' | 'threads' | 'processes';

/**
 * How a child pool hands jobs to its children (Celery's `-O`): `fair` writes a job only to an idle child and keeps
 * the rest in the parent, oldest first; `fcfs` assigns each job round-robin to a child as it arrives, where it waits
 * behind that child's earlier jobs even when another child is idle.
 */
export type SchedulingStrategy = 'fair' | 'fcfs';

/**
 * The executor behind a worker: where task functions run. `async` runs them on the event loop with bounded
 * concurrency; `threads` and `processes` run each one in a child (worker thread or child process) that loaded the
 * app module itself.
 */
export interface Pool {
  readonly name: PoolKind;
  /** The pool's size: jobs that may run at once (children, for child pools). */
  readonly limit: number;
  /** Jobs running now. */
  readonly active: number;
  /** Jobs accepted but waiting for a free slot. */
  readonly waiting: number;
  /** Starts the executors (spawns the children and waits until they loaded the app). */
  start(): Promise<void>;
  /** Queues a job; it starts as soon as a slot is free (fair: a slot goes to the oldest waiting job). */
  apply(job: PoolJob): void;
  /**
   * Runs the task function for a job that holds a slot: in this process (async), a worker thread or a child
   * process. Resolves with the return value; rejects with what the task threw (Retry, Reject... included), or
   * with WorkerLostError when the child running it died. An abort of `context.signal` (the soft time limit) reaches
   * the task; `kill` (hard time limit, terminate; it may come after the soft limit) ends the run: a child pool kills
   * the child and replaces it. Without `kill`, any abort of `context.signal` but the soft limit is a kill.
   */
  run(context: TaskContext, kill?: AbortSignal): Promise<unknown>;
  /**
   * Pools that run tasks on this event loop: calls the task function now and returns what it returned, a value or a
   * promise (what it throws, it throws), so a task that returns at once is settled without a promise.
   */
  invoke?(context: TaskContext): unknown;
  /** Adds `n` slots (children). */
  grow(n: number): void;
  /** Removes `n` slots; a child pool stops idle children now and busy ones when their task ends, never killing one. */
  shrink(n: number): void;
  /** Resolves when nothing runs and nothing waits. */
  drained(): Promise<void>;
  /** Stops taking jobs and drops the waiting ones (their messages were not acked: the broker gives them back). */
  close(): Promise<void>;
  /** Ends the executors: idle children exit, children still running a task are killed. */
  terminate(): Promise<void>;
  /** The id (pid or thread id) of the child running the task now, for pools with children. */
  runningOn?(taskId: string): number | undefined;
  /** Replaces every child once its current task ends (`pool_restart`); pools without children have none. */
  restart?(): void;
  /** The `pool` entry of `inspect stats`, in Celery's shape (a pool without it is described by the stats builder). */
  info?(): Record<string, unknown>;
}

/** Without a kill signal of its own: any abort of the task's signal but the soft time limit is a kill. */
export function killOf(signal: AbortSignal): AbortSignal {
  const kill = new AbortController();
  const follow = (): void => {
    if (!(signal.reason instanceof SoftTimeLimitExceeded)) kill.abort(signal.reason);
  };
  if (signal.aborted) follow();
  else signal.addEventListener('abort', follow, { once: true });
  return kill.signal;
}
