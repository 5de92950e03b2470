import { pythonRepr } from '@kq/core';
import { REPR_MAX_LENGTH, formatIsoDate, truncateRepr } from '../protocol/index';
import { exceptionInfo, exceptionTraceback } from '../results/index';
import type { TaskMessage } from '../protocol/index';

/** The task lifecycle steps a worker reports (`worker.on('task', ...)`), i.e. `task-<kind>` events. */
export type TaskEventKind = 'received' | 'started' | 'succeeded' | 'failed' | 'retried' | 'rejected' | 'revoked';

/**
 * The fields of a worker's `task-<kind>` event, as Celery's worker sends them (docs/wire.md#events): `uuid` first, then
 * per kind — received: `name, args, kwargs` (the repr strings), `root_id, parent_id, retries, eta, expires`;
 * succeeded: `result` (repr string) and `runtime`; failed/retried: `exception` (repr) and `traceback`; rejected:
 * `requeue`; revoked: `terminated, signum, expired`. `details` is what the worker passed along (the raw result or
 * error); it is turned into those strings here.
 */
export function taskEventFields(kind: TaskEventKind, request: { readonly message: TaskMessage }, details: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
  const { message } = request;
  switch (kind) {
    case 'received':
      return {
        uuid: message.id,
        name: message.name,
        args: message.argsrepr,
        kwargs: message.kwargsrepr,
        root_id: message.rootId,
        parent_id: message.parentId,
        retries: message.retries,
        eta: message.eta ? formatIsoDate(message.eta) : null,
        expires: message.expires ? formatIsoDate(message.expires) : null,
      };
    case 'started':
      return { uuid: message.id };
    case 'succeeded':
      return { uuid: message.id, result: resultRepr(details['result']), runtime: numberOr(details['runtime'], 0) };
    case 'failed':
      return { uuid: message.id, exception: exceptionRepr(details['exception']), traceback: tracebackOf(details['exception']) };
    case 'retried': {
      const exception = details['exception'];
      return { uuid: message.id, exception: exception === null || exception === undefined ? 'None' : exceptionRepr(exception), traceback: tracebackOf(exception) };
    }
    case 'rejected':
      return { uuid: message.id, requeue: details['requeue'] === true };
    case 'revoked':
      return {
        uuid: message.id,
        terminated: details['terminated'] === true,
        signum: details['signum'] ?? null,
        expired: details['expired'] === true,
      };
  }
}

/** Python's `saferepr(result, 1024)`: what `task-succeeded` carries as `result`. */
export function resultRepr(value: unknown): string {
  try {
    return truncateRepr(pythonRepr(value), REPR_MAX_LENGTH);
  } catch {
    return truncateRepr(String(value), REPR_MAX_LENGTH);
  }
}

/** `repr(exception)` as a Python peer writes it, with kq's Python names for JavaScript errors: `ValueError('x')`. */
export function exceptionRepr(error: unknown): string {
  const info = exceptionInfo(error);
  const args = Array.isArray(info.exc_message) ? info.exc_message : [info.exc_message];
  return truncateRepr(`${info.exc_type}(${args.map((arg) => pythonRepr(arg)).join(', ')})`, REPR_MAX_LENGTH);
}

function tracebackOf(error: unknown): string | null {
  return error === null || error === undefined ? null : exceptionTraceback(error);
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}
