import { backoffCountdown } from '@kq/core';
import { Ignore, Reject, Retry } from '../errors/errors';
import type { TaskContext } from '../task/task';

/**
 * Celery's `autoretry_for`: when the task lists the error (classes or a predicate), re-sends the task with the
 * backoff countdown and returns the `Retry`; otherwise (or when retries ran out) returns the error to report.
 * Runs where the task ran — in a pool child the error classes are the child's, so `instanceof` matches.
 */
export async function autoretry(context: TaskContext, error: unknown): Promise<unknown> {
  if (error instanceof Retry || error instanceof Reject || error instanceof Ignore) return error;
  const options = context.task.options;
  const listed = options.autoretryFor;
  if (!listed) return error;
  try {
    const matches = typeof listed === 'function' ? listed(error) : listed.some((kind) => error instanceof kind);
    if (!matches) return error;
    const backoff = options.retryBackoff;
    const countdown = backoff
      ? backoffCountdown(context.request.retries, {
          factor: backoff === true ? 1 : backoff,
          maximum: options.retryBackoffMax ?? 600,
          jitter: options.retryJitter ?? true,
        })
      : undefined;
    await context.retry({ exc: error, ...(countdown === undefined ? {} : { countdown }) });
    return error;
  } catch (retryError) {
    return retryError;
  }
}
