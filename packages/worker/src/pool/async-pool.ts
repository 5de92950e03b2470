import type { TaskContext } from '../task/task';
import type { Pool, PoolJob } from './pool';

/**
 * Runs task functions on the event loop, at most `limit` at a time, oldest first. Nothing is written to a busy
 * slot, so a short task never waits behind a long one while a slot is free (Celery's `fair` strategy). A slot is
 * free again once its job releases it (the result is stored), not when the ack lands, as a child is in child pools.
 */
export class AsyncPool implements Pool {
  readonly name = 'async';
  #limit: number;
  /** Slots taken: jobs that started and have not released their slot. */
  #active = 0;
  /** Jobs that started and have not ended (released ones included: their ack may still be on its way). */
  #unfinished = 0;
  readonly #waiting: PoolJob[] = [];
  #idleWaiters: Array<() => void> = [];
  /** In `#pump`: a job that ends inline releases its slot from inside the loop, which then takes the next job. */
  #pumping = false;

  constructor(limit: number) {
    this.#limit = Math.max(1, Math.trunc(limit));
  }

  get limit(): number {
    return this.#limit;
  }

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  async start(): Promise<void> {
    // Nothing to spawn: tasks run on this event loop.
  }

  apply(job: PoolJob): void {
    this.#waiting.push(job);
    this.#pump();
  }

  /**
   * Calls the task function on the event loop; it sees cancellation through `context.signal`. An async function
   * cannot be killed: on a kill the worker stops waiting for it and frees the slot.
   */
  run(context: TaskContext): Promise<unknown> {
    // Called at once rather than from a microtask: a task's run is already past every await before it, and the
    // extra hop cost two promises per task.
    try {
      const value = this.invoke(context);
      return value instanceof Promise ? value : Promise.resolve(value);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  invoke(context: TaskContext): unknown {
    return context.task.invoke(context);
  }

  grow(n: number): void {
    this.#limit += Math.max(0, Math.trunc(n));
    this.#pump();
  }

  shrink(n: number): void {
    this.#limit = Math.max(1, this.#limit - Math.max(0, Math.trunc(n)));
  }

  drained(): Promise<void> {
    if (this.#unfinished === 0 && this.#waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.#waiting.length = 0;
  }

  async terminate(): Promise<void> {
    // An async function cannot be killed; running ones were aborted through their signal.
  }

  #pump(): void {
    // Not re-entered: a task that returns at once releases its slot from within `job(release)` below, and pumping
    // from there would nest one call per waiting job.
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      this.#startWaiting();
    } finally {
      this.#pumping = false;
    }
  }

  #startWaiting(): void {
    while (this.#active < this.#limit && this.#waiting.length > 0) {
      const job = this.#waiting.shift() as PoolJob;
      this.#active++;
      this.#unfinished++;
      let held = true;
      const release = (): void => {
        if (!held) return;
        held = false;
        this.#active--;
        this.#pump();
      };
      const finished = (): void => {
        release();
        this.#unfinished--;
        if (this.#unfinished === 0 && this.#waiting.length === 0) {
          const waiters = this.#idleWaiters;
          this.#idleWaiters = [];
          for (const resolve of waiters) resolve();
        }
      };
      // A job may end inline (see `#pump`), and one that throws instead of rejecting still ends.
      let ending: Promise<void>;
      try {
        ending = job(release);
      } catch (error) {
        ending = Promise.reject(error);
      }
      // One continuation for either end (not a catch and a finally: two promises per task).
      void ending.then(finished, finished);
    }
  }
}
