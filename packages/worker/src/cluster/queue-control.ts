import type { Queue } from '@kq/core';
import type { WorkerHost } from '../runtime/worker-host';

/**
 * What `add_consumer` / `cancel_consumer` need from a worker: changing the task queues it consumes while it runs
 * (Celery's `add_task_queue` / `cancel_task_queue`). `worker.queues` must list the queues consumed now, since
 * `active_queues` reports them.
 */
export interface TaskQueueControl {
  /** Declares `queue` and starts consuming from it too; resolves false when it was consumed already. */
  addQueue(queue: Queue): Promise<boolean>;
  /** Stops consuming from the queue named `name` (messages in hand are still settled); false when not consumed. */
  cancelQueue(name: string): Promise<boolean>;
}

/** The worker's queue control, when this `Worker` has it. */
export function queueControlOf(worker: WorkerHost): TaskQueueControl | undefined {
  const candidate = worker as unknown as Partial<TaskQueueControl>;
  if (typeof candidate.addQueue !== 'function' || typeof candidate.cancelQueue !== 'function') return undefined;
  return candidate as TaskQueueControl;
}
