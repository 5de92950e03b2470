import type { AnySignature } from './signature';

/**
 * The failed request a new-style errback is called with (Celery passes its `Context`): the task that failed, or for a
 * chord whose header failed, its body (as Celery's `chord_error_from_stack` builds it).
 */
export interface ErrbackRequest {
  readonly id: string;
  readonly name: string;
  readonly args: readonly unknown[];
  readonly kwargs: Readonly<Record<string, unknown>>;
  readonly rootId: string | null;
  readonly parentId: string | null;
  readonly group: string | null;
}

/**
 * Calls the errbacks that are new-style on this worker (tasks declared with `errbackWithRequest`) in-process with
 * `(request, exc, traceback)`, as Celery's `_call_task_errbacks` does for an errback whose function takes more than
 * one argument, and returns the others: old-style errbacks, sent as tasks with the failed id.
 */
export type ErrbackCaller = (
  errbacks: readonly AnySignature[],
  request: ErrbackRequest,
  error: unknown,
  traceback: string | null,
) => Promise<AnySignature[]>;
