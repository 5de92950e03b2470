import { brandClass, KqError } from '@kq/core';

/** A task message that cannot be run as sent: bad body shape, missing headers, unparseable ETA. */
export class InvalidTaskError extends KqError {}

/** A signature was given an option kq does not know (a misspelt name, or one kq would not apply). */
export class InvalidSignatureOption extends KqError {}

/** A message named a task this worker does not have. */
export class NotRegistered extends KqError {
  constructor(readonly taskName: string) {
    super(`Received unregistered task of type ${JSON.stringify(taskName)}. Register it with app.task(${JSON.stringify(taskName)}, fn) on the worker, or route it to a worker that has it.`);
  }
}

/** Thrown by `ctx.retry()`: the task was re-sent to run again later. Let it propagate. */
export class Retry extends KqError {
  constructor(
    message: string,
    /** The error that caused the retry, stored with the RETRY state. */
    readonly exc?: unknown,
    readonly when?: Date,
  ) {
    super(message, exc === undefined ? undefined : { cause: exc });
  }
}

/** Throw from a task to reject its message (requeue it or drop/dead-letter it) instead of storing a result. */
export class Reject extends KqError {
  constructor(
    readonly reason = 'rejected by task',
    readonly requeue = false,
  ) {
    super(reason);
  }
}

/** Throw from a task to acknowledge its message without storing any state. */
export class Ignore extends KqError {}

/** `ctx.retry()` was called more than `maxRetries` times. */
export class MaxRetriesExceededError extends KqError {}

/** The soft time limit passed: the task's AbortSignal was aborted with this reason. */
export class SoftTimeLimitExceeded extends KqError {}

/** The hard time limit passed: the task was abandoned and failed. */
export class TimeLimitExceeded extends KqError {}

/** The process running the task died (or the task crashed its worker repeatedly). */
export class WorkerLostError extends KqError {}

/** The task was revoked (or expired) before or while it ran. */
export class TaskRevokedError extends KqError {}

/**
 * The worker stopped (cold shutdown, or a warm one past its timeout) while the task ran: the run was abandoned, not
 * failed. Its message goes back to the queue (acks late) — no result is stored, the task runs again elsewhere.
 */
export class WorkerShutdownError extends KqError {}

/**
 * A chord could not run its body: a header task failed (`Dependency <id> raised ...`), the join failed, or the body
 * could not be sent. Stored as the body's result (Celery's `celery.exceptions.ChordError`) and passed to its errbacks.
 */
export class ChordError extends KqError {}

/** A canvas that cannot work as built (Celery's `ImproperlyConfigured`), e.g. replacing a task with a chord member. */
export class ImproperlyConfigured extends KqError {}

/** The task failed remotely; `AsyncResult.get()` raises this with the remote exception's type and message. */
export class TaskFailedError extends KqError {
  constructor(
    readonly taskId: string,
    readonly excType: string,
    readonly excMessage: unknown[],
    readonly excModule: string,
    readonly remoteTraceback: string | null,
  ) {
    super(`Task ${taskId} failed: ${excType}(${excMessage.map((part) => JSON.stringify(part)).join(', ')})`);
  }
}

// Every error class here answers `instanceof` for its instances from another copy of @kq/worker too (see brandClass).
for (const [name, errorClass] of Object.entries({
  InvalidSignatureOption,
  InvalidTaskError,
  NotRegistered,
  Retry,
  Reject,
  Ignore,
  MaxRetriesExceededError,
  SoftTimeLimitExceeded,
  TimeLimitExceeded,
  WorkerLostError,
  TaskRevokedError,
  WorkerShutdownError,
  ChordError,
  ImproperlyConfigured,
  TaskFailedError,
})) {
  brandClass(errorClass, `@kq/worker:${name}`);
}
