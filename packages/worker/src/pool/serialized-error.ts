import { NotRegistered, Reject, Retry, TaskFailedError } from '../errors/errors';
import { PythonException } from '../errors/python-exception';
import { TASK_ERRORS, taskErrorEntryNamed, taskErrorEntryOf } from '../errors/task-error-registry';

/**
 * An error as it crosses between a pool child and the worker. kq's task errors come back as the same class (a
 * `Retry` thrown by `ctx.retry()` in a child is a `Retry` in the worker, with its `exc` and `when`); JS built-in
 * errors as the same built-in (so `autoretryFor: [RangeError]` matches); anything else as an `Error` with the
 * original `name`, `message`, `stack` and plain own properties (`code`, `errno`...).
 */
export interface SerializedError {
  /** Which class to rebuild: a kq task error, a JS built-in, or `Error` for anything else. */
  kind: string;
  name: string;
  message: string;
  stack?: string;
  /** Plain-data own properties (`code`, `status`...). */
  props?: Record<string, unknown>;
  cause?: SerializedError;
  /** Retry */
  exc?: SerializedError;
  when?: number;
  /** Reject */
  reason?: string;
  requeue?: boolean;
  /** NotRegistered */
  taskName?: string;
  /** TaskFailedError */
  failed?: { taskId: string; excType: string; excMessage: unknown[]; excModule: string; remoteTraceback: string | null };
  /** A thrown non-error (a string, a number...), kept as it was when it is plain data. */
  thrown?: unknown;
}

type MessageErrorClass = new (message: string) => Error;

const BUILTINS: Readonly<Record<string, MessageErrorClass>> = {
  Error,
  TypeError,
  RangeError,
  ReferenceError,
  SyntaxError,
  EvalError,
  URIError,
};

/** kq's task errors, also recognised by name (they decide how the worker settles the message). */
const KQ_NAMES: ReadonlySet<string> = new Set(TASK_ERRORS.filter((entry) => entry.settles).map((entry) => entry.name));

const MAX_DEPTH = 5;

export function serializeError(error: unknown, depth = 0): SerializedError {
  if (!(error instanceof Error)) {
    return { kind: 'thrown', name: 'Error', message: describeThrown(error), ...(isPlainData(error) ? { thrown: error } : {}) };
  }
  const kind = kindOf(error);
  const base: SerializedError = { kind, name: error.name, message: error.message };
  if (error.stack !== undefined) base.stack = error.stack;
  const props = plainProps(error);
  if (props) base.props = props;
  if (depth < MAX_DEPTH && error.cause !== undefined && kind !== 'Retry') base.cause = serializeError(error.cause, depth + 1);
  // Fields read by shape, not class: the error may come from the other build of @kq/worker (CommonJS next to ESM).
  const fields = error as unknown as Record<string, unknown>;
  if (kind === 'Retry') {
    if (fields['exc'] !== undefined && depth < MAX_DEPTH) base.exc = serializeError(fields['exc'], depth + 1);
    if (fields['when'] instanceof Date) base.when = fields['when'].getTime();
  } else if (kind === 'Reject') {
    if (typeof fields['reason'] === 'string') base.reason = fields['reason'];
    base.requeue = fields['requeue'] === true;
  } else if (kind === 'NotRegistered') {
    if (typeof fields['taskName'] === 'string') base.taskName = fields['taskName'];
  } else if (error instanceof TaskFailedError) {
    base.failed = {
      taskId: error.taskId,
      excType: error.excType,
      excMessage: [...error.excMessage],
      excModule: error.excModule,
      remoteTraceback: error.remoteTraceback,
    };
  }
  return base;
}

export function deserializeError(data: SerializedError): Error {
  let error: Error;
  switch (data.kind) {
    case 'thrown':
      // The task threw a non-error: give the worker the same value back, as the async pool would.
      if ('thrown' in data) return data.thrown as Error;
      error = new Error(data.message);
      break;
    case 'Retry':
      error = new Retry(data.message, data.exc ? deserializeError(data.exc) : undefined, data.when === undefined ? undefined : new Date(data.when));
      break;
    case 'Reject':
      error = new Reject(data.reason ?? data.message, data.requeue ?? false);
      break;
    case 'NotRegistered':
      error = new NotRegistered(data.taskName ?? data.message);
      break;
    case 'PythonException': {
      // Its module, type and arguments travel as its own properties (`props`).
      const props = data.props ?? {};
      const args = props['pythonArgs'];
      error = new PythonException(String(props['pythonModule']), String(props['pythonType']), Array.isArray(args) ? args : []);
      break;
    }
    case 'TaskFailedError': {
      const failed = data.failed;
      error = failed
        ? new TaskFailedError(failed.taskId, failed.excType, failed.excMessage, failed.excModule, failed.remoteTraceback)
        : new Error(data.message);
      break;
    }
    default: {
      const rebuild = taskErrorEntryNamed(data.kind)?.rebuild;
      error = rebuild ? rebuild(data.message, []) : new (BUILTINS[data.kind] ?? Error)(data.message);
      if (error.name !== data.name) error.name = data.name;
    }
  }
  if (data.stack !== undefined) error.stack = data.stack;
  if (data.cause && error.cause === undefined) Object.defineProperty(error, 'cause', { value: deserializeError(data.cause), configurable: true, writable: true });
  if (data.props) {
    for (const [key, value] of Object.entries(data.props)) {
      if (!(key in error)) (error as unknown as Record<string, unknown>)[key] = value;
    }
  }
  return error;
}

function kindOf(error: Error): string {
  if (error instanceof TaskFailedError) return 'TaskFailedError';
  if (error instanceof PythonException) return 'PythonException';
  const entry = taskErrorEntryOf(error);
  if (entry?.rebuild) return entry.name;
  // A kq error from the other build of @kq/worker fails `instanceof`; kq errors are named after their class.
  if (KQ_NAMES.has(error.name)) return error.name;
  // The most derived built-in the error is an instance of (a `class MyError extends RangeError` stays a RangeError).
  for (const [kind, errorClass] of Object.entries(BUILTINS)) if (kind !== 'Error' && error instanceof errorClass) return kind;
  return 'Error';
}

/** Own enumerable properties that are plain data (a Node system error's `code`, `errno`, `syscall`...). */
function plainProps(error: Error): Record<string, unknown> | undefined {
  let props: Record<string, unknown> | undefined;
  for (const key of Object.keys(error)) {
    if (key === 'name' || key === 'message' || key === 'stack' || key === 'cause') continue;
    const value = (error as unknown as Record<string, unknown>)[key];
    if (isPlainData(value)) (props ??= {})[key] = value;
  }
  return props;
}

function isPlainData(value: unknown, depth = 0): boolean {
  if (value === null) return true;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (depth > 4) return false;
      if (Array.isArray(value)) return value.length <= 100 && value.every((item) => isPlainData(item, depth + 1));
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      const entries = Object.entries(value as Record<string, unknown>);
      return entries.length <= 100 && entries.every(([, item]) => isPlainData(item, depth + 1));
    }
    default:
      return false;
  }
}

function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
