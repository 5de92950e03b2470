import { OperationTimeout, isExceptionInfo, type ExceptionInfo } from '@kq/core';
import { NotRegistered, TaskFailedError } from '../errors/errors';
import { PythonException, formatExceptionMessage } from '../errors/python-exception';
import { taskErrorEntryNamed, taskErrorEntryOf } from '../errors/task-error-registry';

export { formatExceptionMessage };

/*
 * How JavaScript errors are stored for Python readers (Celery's `{exc_type, exc_message, exc_module}`,
 * docs/wire.md#on-redis). A Python client re-raises the stored exception by looking `exc_type` up in the
 * already-imported module `exc_module`; when that fails it synthesizes an exception class of that name. So:
 *
 * - JS built-ins map to the Python built-in that means the same: `Error` → `Exception`, `TypeError` → `TypeError`,
 *   `RangeError` → `ValueError` (a value outside what is allowed), `ReferenceError` → `NameError` (Python's own
 *   `ReferenceError` is about weak references), `SyntaxError` → `SyntaxError`; module `builtins`.
 * - An error whose name is a Python built-in exception (`TimeoutError`, `KeyError`, a JS class named `ValueError`...)
 *   is stored under that built-in, so a JS task can raise what Python code catches.
 * - kq's task errors (`TaskRevokedError`, `SoftTimeLimitExceeded`, `Retry`...) are stored as their Celery
 *   counterparts in `celery.exceptions`; kq's codec errors as Kombu's in `kombu.exceptions`.
 * - A `PythonException` is stored as the module, type and arguments it names.
 * - Anything else keeps its JS name (its `name`, or its class name when `name` was left as `Error`) under module
 *   `kq.errors`; Python has no such module, so a Python reader gets a synthesized exception class of that name.
 *
 * `exc_message` is `[message]` (Python's `exc.args`). `exceptionFromInfo` maps back, so a JS `RangeError` comes back to
 * a kq client as a `RangeError`.
 */

/** The `exc_module` of JS errors that have no Python counterpart. */
export const KQ_EXCEPTION_MODULE = 'kq.errors';

const JS_TO_PYTHON_BUILTIN: Readonly<Record<string, string>> = {
  Error: 'Exception',
  TypeError: 'TypeError',
  RangeError: 'ValueError',
  ReferenceError: 'NameError',
  SyntaxError: 'SyntaxError',
};

type ErrorConstructorLike = new (message?: string) => Error;

const PYTHON_BUILTIN_TO_JS: Readonly<Record<string, ErrorConstructorLike>> = {
  Exception: Error,
  TypeError,
  ValueError: RangeError,
  NameError: ReferenceError,
  SyntaxError,
};

/**
 * Python's built-in exceptions that derive from `Exception` and take a single message argument. Excluded on purpose:
 * `SystemExit`/`KeyboardInterrupt`/`GeneratorExit` (not `Exception`s: re-raising one would stop a Python client) and
 * the ones Python cannot construct from one message (`UnicodeDecodeError`, `ExceptionGroup`...).
 */
const PYTHON_BUILTIN_EXCEPTIONS: ReadonlySet<string> = new Set([
  'ArithmeticError', 'AssertionError', 'AttributeError', 'BlockingIOError', 'BrokenPipeError', 'BufferError',
  'ChildProcessError', 'ConnectionAbortedError', 'ConnectionError', 'ConnectionRefusedError', 'ConnectionResetError',
  'EOFError', 'EnvironmentError', 'Exception', 'FileExistsError', 'FileNotFoundError', 'FloatingPointError', 'IOError',
  'ImportError', 'IndentationError', 'IndexError', 'InterruptedError', 'IsADirectoryError', 'KeyError', 'LookupError',
  'MemoryError', 'ModuleNotFoundError', 'NameError', 'NotADirectoryError', 'NotImplementedError', 'OSError',
  'OverflowError', 'PermissionError', 'ProcessLookupError', 'RecursionError', 'RuntimeError', 'StopAsyncIteration',
  'StopIteration', 'SyntaxError', 'SystemError', 'TabError', 'TimeoutError', 'TypeError', 'UnboundLocalError',
  'UnicodeError', 'ValueError', 'ZeroDivisionError',
]);

/** billiard (Celery's pool) raises some of Celery's exceptions from its own module: read them as Celery's. */
const PYTHON_MODULE_ALIASES: Readonly<Record<string, string>> = { 'billiard.exceptions': 'celery.exceptions' };

/** Celery's stored form of an error thrown by a task (see the mapping above). Never throws. */
export function exceptionInfo(error: unknown): ExceptionInfo {
  if (error instanceof TaskFailedError) {
    // A remote failure passed on (a task awaiting another): keep the original exception.
    return { exc_type: error.excType, exc_message: [...error.excMessage], exc_module: error.excModule };
  }
  if (!(error instanceof Error)) {
    return { exc_type: 'Exception', exc_message: [describeThrown(error)], exc_module: 'builtins' };
  }
  if (error instanceof PythonException) {
    return { exc_type: error.pythonType, exc_message: [...error.pythonArgs], exc_module: error.pythonModule };
  }
  const message = error.message;
  // kq errors are stored as their Python counterparts (same class name in that module).
  const entry = taskErrorEntryOf(error);
  if (entry?.pythonModule !== undefined) {
    return { exc_type: entry.name, exc_message: error instanceof NotRegistered ? [error.taskName] : [message], exc_module: entry.pythonModule };
  }
  if (error instanceof OperationTimeout) return { exc_type: 'TimeoutError', exc_message: [message], exc_module: 'builtins' };
  const name = errorName(error);
  const builtin = JS_TO_PYTHON_BUILTIN[name] ?? (PYTHON_BUILTIN_EXCEPTIONS.has(name) ? name : undefined);
  if (builtin !== undefined) return { exc_type: builtin, exc_message: [message], exc_module: 'builtins' };
  return { exc_type: name, exc_message: [message], exc_module: KQ_EXCEPTION_MODULE };
}

/**
 * The `traceback` Celery stores next to the exception: the error's stack, with its `cause` chain. Null when there is
 * no stack (a thrown non-error).
 */
export function exceptionTraceback(error: unknown): string | null {
  const parts: string[] = [];
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current instanceof Error && !seen.has(current) && parts.length < 10) {
    seen.add(current);
    parts.push(current.stack ?? `${current.name}: ${current.message}`);
    current = current.cause;
  }
  return parts.length === 0 ? null : parts.join('\n\nCaused by: ');
}

/**
 * The error a stored exception stands for: kq's own class where it has one (`RangeError` for Python's `ValueError`,
 * `TaskRevokedError` for Celery's, see `exceptionInfo`), otherwise an `Error` whose `name` is the remote type. The
 * message is what Python's `str(exc)` prints.
 */
export function exceptionFromInfo(info: unknown): Error {
  if (!isExceptionInfo(info)) return new Error(formatExceptionMessage(info));
  const args = info.exc_message;
  const message = formatExceptionMessage(args);
  const module = typeof info.exc_module === 'string' ? info.exc_module : '';
  if (module === 'builtins') {
    const jsClass = PYTHON_BUILTIN_TO_JS[info.exc_type];
    if (jsClass) return new jsClass(message);
  }
  const entry = taskErrorEntryNamed(info.exc_type);
  if (entry?.rebuild && entry.pythonModule !== undefined && entry.pythonModule === (PYTHON_MODULE_ALIASES[module] ?? module)) {
    return entry.rebuild(message, args);
  }
  const error = new Error(message);
  error.name = info.exc_type;
  return error;
}


/** `name`, or the class name when a subclass left `name` as `Error` (`class PaymentDeclined extends Error {}`). */
function errorName(error: Error): string {
  const name = typeof error.name === 'string' && error.name !== '' ? error.name : 'Error';
  if (name !== 'Error') return name;
  const className = (error.constructor as { name?: unknown } | undefined)?.name;
  return typeof className === 'string' && className !== '' ? className : 'Error';
}

function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) {
    try {
      const json = JSON.stringify(value);
      if (json !== undefined) return json;
    } catch {
      // fall back to String()
    }
  }
  return String(value);
}
