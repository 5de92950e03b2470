import type { TaskContext } from '../task/task';
import type { ChildHandle } from './child-handle';
import type { PoolJob } from './pool';

/** A pool job's hold on a child: from the job's start until its task ran (or the job ended without running it). */
export interface ChildBinding {
  child: PoolChild;
  released: boolean;
}

/** The task a child is running now. */
export interface ChildRun {
  readonly id: number;
  readonly context: TaskContext;
  /** Settles the run once (the result, the task's error, a kill reason or WorkerLostError). */
  finish(outcome: { ok: true; value: unknown } | { ok: false; error: unknown }): void;
}

/** The pool's record of one child: its lifecycle, the job holding it, its fcfs queue and its counters. */
export class PoolChild {
  readonly handle: ChildHandle;
  state: 'starting' | 'ready' | 'exited' = 'starting';
  /** Leaves as soon as it is free (recycled after maxTasksPerChild / maxMemoryPerChild, or shrunk away). */
  retiring = false;
  /** A graceful stop was asked (or it was killed): it takes nothing more. */
  stopping = false;
  binding: ChildBinding | null = null;
  current: ChildRun | null = null;
  /** fcfs: jobs assigned to this child, run in order when it is free. */
  readonly queue: PoolJob[] = [];
  /** Tasks it finished (maxTasksPerChild). */
  tasks = 0;
  /** Tasks written to it (`inspect stats` → pool.writes). */
  writes = 0;
  /** Why it was killed on purpose (hard time limit, terminate): its run fails with this, not WorkerLostError. */
  killReason: unknown = undefined;
  /** What the child reported when it could not load the app. */
  startError: Error | undefined;
  readonly ready: Promise<void>;
  #settleReady!: (error?: Error) => void;

  constructor(handle: ChildHandle) {
    this.handle = handle;
    this.ready = new Promise<void>((resolve, reject) => {
      this.#settleReady = (error) => (error ? reject(error) : resolve());
    });
    this.ready.catch(() => undefined); // observed by start(), or nobody: never an unhandled rejection
  }

  /** Ready, not leaving, and no job holds it. */
  get free(): boolean {
    return this.state === 'ready' && !this.retiring && !this.stopping && this.binding === null && this.current === null;
  }

  /** Nothing runs on it and no job holds it. */
  get idle(): boolean {
    return this.binding === null && this.current === null;
  }

  markReady(): void {
    this.state = 'ready';
    this.#settleReady();
  }

  markExited(reason: Error): void {
    this.state = 'exited';
    this.#settleReady(reason);
  }
}
