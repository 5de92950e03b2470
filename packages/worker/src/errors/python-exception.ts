import { brandClass, KqError, pythonRepr, pythonTupleRepr } from '@kq/core';

/**
 * Throw from a task to fail as a named Python exception: the result stores `exc_module`, `exc_type` and the
 * arguments as they are (`exc_message`), so a Python caller re-raises that very class when it can import the module
 * (`pytest.raises(ExpectedException)`, `except PaymentDeclined:`), with its `args` intact. Any other JS error is stored
 * as the Python built-in that means the same, or under the made-up module `kq.errors`, which no Python caller can catch
 * by class. The arguments must be what the result serializer carries (JSON: strings, numbers, lists, dicts, null).
 *
 *   throw new PythonException('billing.errors', 'PaymentDeclined', ['card expired', 402]);
 *
 * A kq caller gets the error back as an `Error` named after the type.
 */
export class PythonException extends KqError {
  constructor(
    /** The module a Python caller imports the class from: `'builtins'`, `'myproj.errors'`. */
    readonly pythonModule: string,
    /** The class name in that module. */
    readonly pythonType: string,
    /** The exception's `args`. */
    readonly pythonArgs: readonly unknown[] = [],
  ) {
    super(formatExceptionMessage(pythonArgs));
    this.name = pythonType;
  }
}

// `instanceof PythonException` holds for one thrown by a task of another copy of @kq/worker too (see brandClass).
brandClass(PythonException, '@kq/worker:PythonException');

/** Python's `str(exc)`: '' without arguments, the argument itself for one string, the tuple's repr for several. */
export function formatExceptionMessage(args: unknown): string {
  if (!Array.isArray(args)) return typeof args === 'string' ? args : args === undefined || args === null ? '' : pythonRepr(args);
  if (args.length === 0) return '';
  if (args.length === 1) return typeof args[0] === 'string' ? args[0] : pythonRepr(args[0]);
  return pythonTupleRepr(args);
}
