/** Celery task states. PENDING is never stored: it means "no result known". */
export type TaskState = 'PENDING' | 'RECEIVED' | 'STARTED' | 'SUCCESS' | 'FAILURE' | 'RETRY' | 'REVOKED' | 'REJECTED';

/** States after which a task will not change again. */
export const READY_STATES: ReadonlySet<TaskState> = new Set(['SUCCESS', 'FAILURE', 'REVOKED', 'REJECTED']);
/** Ready states that mean the task did not succeed. */
export const EXCEPTION_STATES: ReadonlySet<TaskState> = new Set(['FAILURE', 'RETRY', 'REVOKED', 'REJECTED']);

/** How Celery stores an exception (docs/wire.md#on-redis): Python imports `exc_module` and looks up `exc_type`. */
export interface ExceptionInfo {
  exc_type: string;
  exc_message: unknown[];
  exc_module: string;
}

/** A stored task result, in Celery's field names and order, so Python and kq read each other's results. */
export interface ResultMeta {
  status: TaskState;
  result: unknown;
  traceback: string | null;
  children: unknown[] | null;
  /** ISO timestamp once the state is ready, else null. */
  date_done: string | null;
  group_id?: string | null;
  parent_id?: string | null;
  // Extended fields (`result_extended`): null where the request did not know them (an unknown task's failure).
  name?: string | null;
  args?: unknown[] | null;
  kwargs?: Record<string, unknown> | null;
  worker?: string | null;
  retries?: number | null;
  queue?: string | null;
  task_id: string;
}

export function isReadyState(state: string): boolean {
  return READY_STATES.has(state as TaskState);
}

/** True for `{exc_type, exc_message, exc_module}` objects. */
export function isExceptionInfo(value: unknown): value is ExceptionInfo {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Record<string, unknown>)['exc_type'] === 'string' &&
    Array.isArray((value as Record<string, unknown>)['exc_message'])
  );
}
