import { ContentDisallowed, DecodeError, EncodeError, OperationTimeout, SecurityError } from '@kq/core';
import {
  ChordError,
  Ignore,
  ImproperlyConfigured,
  InvalidTaskError,
  MaxRetriesExceededError,
  NotRegistered,
  Reject,
  Retry,
  SoftTimeLimitExceeded,
  TaskRevokedError,
  TimeLimitExceeded,
  WorkerLostError,
} from './errors';

type ErrorClass = abstract new (...args: never[]) => Error;

/** One kq error class as it crosses a boundary: to a pool child and back, or into a result for Python readers. */
export interface TaskErrorEntry {
  /** The class name, spelled out: it is a wire value (Celery's `exc_type`) and must survive a bundler renaming classes. */
  readonly name: string;
  readonly errorClass: ErrorClass;
  /** The Python module Celery keeps its counterpart in; undefined when it is stored as a Python built-in instead. */
  readonly pythonModule?: 'celery.exceptions' | 'kombu.exceptions';
  /** Rebuilds one from its message and Python's `exc.args`; undefined when the class needs more than that. */
  readonly rebuild?: (message: string, args: readonly unknown[]) => Error;
  /** Decides how the worker settles the message, so also recognised by name (from another build of @kq/worker). */
  readonly settles?: true;
}

/**
 * kq's error classes, most specific first (the first `instanceof` match wins). Retry, Reject and NotRegistered carry
 * fields a pool crossing keeps beside the message (see pool/serialized-error.ts); TaskFailedError is not here: it
 * stands for a remote exception and is stored as that one.
 */
export const TASK_ERRORS: readonly TaskErrorEntry[] = [
  { name: 'TaskRevokedError', errorClass: TaskRevokedError, pythonModule: 'celery.exceptions', rebuild: (m) => new TaskRevokedError(m), settles: true },
  { name: 'SoftTimeLimitExceeded', errorClass: SoftTimeLimitExceeded, pythonModule: 'celery.exceptions', rebuild: (m) => new SoftTimeLimitExceeded(m), settles: true },
  { name: 'TimeLimitExceeded', errorClass: TimeLimitExceeded, pythonModule: 'celery.exceptions', rebuild: (m) => new TimeLimitExceeded(m), settles: true },
  { name: 'WorkerLostError', errorClass: WorkerLostError, pythonModule: 'celery.exceptions', rebuild: (m) => new WorkerLostError(m), settles: true },
  { name: 'MaxRetriesExceededError', errorClass: MaxRetriesExceededError, pythonModule: 'celery.exceptions', rebuild: (m) => new MaxRetriesExceededError(m), settles: true },
  { name: 'InvalidTaskError', errorClass: InvalidTaskError, pythonModule: 'celery.exceptions', rebuild: (m) => new InvalidTaskError(m) },
  {
    name: 'NotRegistered',
    errorClass: NotRegistered,
    pythonModule: 'celery.exceptions',
    rebuild: (m, args) => new NotRegistered(typeof args[0] === 'string' ? args[0] : m),
    settles: true,
  },
  { name: 'Retry', errorClass: Retry, pythonModule: 'celery.exceptions', rebuild: (m) => new Retry(m), settles: true },
  {
    name: 'Reject',
    errorClass: Reject,
    pythonModule: 'celery.exceptions',
    rebuild: (m, args) => new Reject(typeof args[0] === 'string' ? args[0] : m || undefined, args[1] === true),
    settles: true,
  },
  { name: 'Ignore', errorClass: Ignore, pythonModule: 'celery.exceptions', rebuild: (m) => new Ignore(m), settles: true },
  { name: 'ChordError', errorClass: ChordError, pythonModule: 'celery.exceptions', rebuild: (m) => new ChordError(m) },
  { name: 'ImproperlyConfigured', errorClass: ImproperlyConfigured, pythonModule: 'celery.exceptions', rebuild: (m) => new ImproperlyConfigured(m) },
  { name: 'SecurityError', errorClass: SecurityError, pythonModule: 'celery.exceptions', rebuild: (m) => new SecurityError(m) },
  { name: 'DecodeError', errorClass: DecodeError, pythonModule: 'kombu.exceptions', rebuild: (m) => new DecodeError(m) },
  { name: 'EncodeError', errorClass: EncodeError, pythonModule: 'kombu.exceptions', rebuild: (m) => new EncodeError(m) },
  { name: 'ContentDisallowed', errorClass: ContentDisallowed, pythonModule: 'kombu.exceptions' },
  // Stored as Python's built-in TimeoutError (see results/exception-info.ts).
  { name: 'OperationTimeout', errorClass: OperationTimeout, rebuild: (m) => new OperationTimeout(m) },
];

const BY_NAME: ReadonlyMap<string, TaskErrorEntry> = new Map(TASK_ERRORS.map((entry) => [entry.name, entry]));

/** The entry for the most specific kq class `error` is an instance of. */
export function taskErrorEntryOf(error: Error): TaskErrorEntry | undefined {
  return TASK_ERRORS.find((entry) => error instanceof entry.errorClass);
}

/** The entry named `name` (a class name, or Celery's `exc_type`). */
export function taskErrorEntryNamed(name: string): TaskErrorEntry | undefined {
  return BY_NAME.get(name);
}
