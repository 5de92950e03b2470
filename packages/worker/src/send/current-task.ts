import { AsyncLocalStorage } from 'node:async_hooks';
import { processWide, type ResultTuple } from '@kq/core';

/** What a send needs of the task running around it (Celery's `current_worker_task`). */
export interface CurrentTask {
  readonly request: { readonly id: string; readonly rootId: string | null; readonly traceparent?: string | null };
  /** Results of the tasks it sent, stored as its result's `children` (Celery's trail). */
  readonly children: ResultTuple[];
}

// The async context, not a global: an async pool runs many tasks at once, each send must find its own. Process-wide,
// so a send through another copy of @kq/worker (the app module's) finds the task the worker's copy runs.
const storage = processWide('kq.current-task.v1', () => new AsyncLocalStorage<CurrentTask>());

/** Runs `fn` as `task`: whatever it sends becomes its child (parent_id, root_id, `children`). */
export function runAsCurrentTask<T>(task: CurrentTask, fn: () => T): T {
  return storage.run(task, fn);
}

/** The task whose code is running now, if any. */
export function currentTask(): CurrentTask | undefined {
  return storage.getStore();
}
