import { pythonRepr, pythonTupleRepr, type ResultMeta } from '@kq/core';
import type { ApplyOptions, ClusterTask } from '@kq/worker';
import { parsePythonLiteral } from './python-literal';

/** What a task would be sent again with, or why it cannot be. */
export type ResendPlan =
  | {
      ok: true;
      name: string;
      args: unknown[];
      kwargs: Record<string, unknown>;
      options: ApplyOptions;
      /** Where the arguments were read: the result backend's extended meta (exact) or the events' reprs (read back, checked). */
      source: 'result' | 'events';
    }
  /** `needsQueue`: all is known but where it was sent; a `queue` given makes it resendable. */
  | { ok: false; reason: string; needsQueue?: true };

/**
 * How to send a task again with the same name, arguments and route, under a new id (to `route.queue` when given).
 * Events carry only `argsrepr` / `kwargsrepr` (Celery's, and kq's, which copies it): Python text, cut at 1024
 * characters, possibly a producer's mask. So the exact values come from the result backend when the worker stored them (`result_extended`); otherwise
 * the reprs are read back only when they are plain data that re-renders to the very same text — a cut repr, a
 * tuple or float that JSON cannot tell apart, an object's repr all refuse, with the reason.
 */
export function resendPlan(task: ClusterTask | undefined, meta: ResultMeta | null, route: { queue?: string | undefined; workerQueues?: readonly string[] | undefined } = {}): ResendPlan {
  if (!task) return { ok: false, reason: 'No event about this task has been seen.' };
  const name = task.name ?? (typeof meta?.name === 'string' ? meta.name : null);
  if (!name) return { ok: false, reason: 'The task name is not known (no task-sent or task-received event seen).' };
  const options = route.queue ? { queue: route.queue } : knownRoute(task, meta, route.workerQueues);
  const routed = (args: unknown[], kwargs: Record<string, unknown>, source: 'result' | 'events'): ResendPlan =>
    options
      ? { ok: true, name, args, kwargs, options, source }
      : { ok: false, needsQueue: true, reason: 'The queue it was sent to is not known (no task-sent event, no extended result, and its worker consumes several queues): say which queue.' };
  if (meta && Array.isArray(meta.args) && meta.kwargs && typeof meta.kwargs === 'object') return routed(meta.args, meta.kwargs, 'result');
  const argsrepr = task.fields['args'];
  const kwargsrepr = task.fields['kwargs'];
  if (typeof argsrepr !== 'string' || typeof kwargsrepr !== 'string') {
    return { ok: false, reason: 'Its arguments are not known: no task-sent or task-received event seen, and no extended result (result_extended).' };
  }
  const args = parsePythonLiteral(argsrepr);
  const kwargs = parsePythonLiteral(kwargsrepr);
  const exact =
    Array.isArray(args) &&
    kwargs !== null &&
    typeof kwargs === 'object' &&
    !Array.isArray(kwargs) &&
    argsrepr.startsWith('(') &&
    pythonTupleRepr(args) === argsrepr &&
    pythonRepr(kwargs) === kwargsrepr;
  if (!exact) {
    return {
      ok: false,
      reason:
        'Its arguments are known only as the events show them (argsrepr/kwargsrepr), which are cut or not plain data that reads back exactly; a worker with result_extended stores them exactly.',
    };
  }
  return routed(args, kwargs, 'events');
}

/**
 * Where it was sent, when something says: the `task-sent` event's queue or exchange and routing key, the extended
 * result's queue (kq stores the delivery's routing key there), or the only queue the worker that received it consumes
 * (a worker receives only from its queues). Undefined when none says: the caller asks for a queue rather than letting
 * the dashboard's own routing send it where nobody may consume.
 */
export function knownRoute(task: ClusterTask, meta: ResultMeta | null, workerQueues: readonly string[] | undefined): ApplyOptions | undefined {
  const text = (value: unknown): string | undefined => (typeof value === 'string' && value ? value : undefined);
  const queue = text(task.fields['queue']);
  if (queue) return { queue };
  const exchange = text(task.fields['exchange']);
  const routingKey = text(task.fields['routing_key']);
  if (routingKey) return { routingKey, ...(exchange ? { exchange } : {}) };
  const stored = text(meta?.queue);
  if (stored) return { queue: stored };
  return workerQueues?.length === 1 && workerQueues[0] ? { queue: workerQueues[0] } : undefined;
}
