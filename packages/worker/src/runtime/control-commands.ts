import { KqError, NO_REPLY, type MailboxHandler } from '@kq/core';
import type { WorkerHost } from './worker-host';

/**
 * The remote-control commands a kq worker answers, with Celery's argument and reply shapes
 * (docs/wire.md#remote-control-pidbox), so `celery inspect` / `celery control` and Flower work against kq workers.
 */
export function controlCommands(worker: WorkerHost): Record<string, MailboxHandler> {
  const ids = (value: unknown): string[] =>
    (Array.isArray(value) ? value : typeof value === 'string' ? [value] : []).filter((id): id is string => typeof id === 'string');

  const revoke = (args: Record<string, unknown>): unknown => {
    const taskIds = ids(args['task_id']);
    for (const id of taskIds) worker.state.revoked.add(id);
    if (args['terminate']) {
      const running = taskIds.filter((id) => worker.state.active.has(id));
      for (const id of running) worker.state.active.get(id)?.terminate(`revoked with terminate (${String(args['signal'] ?? 'SIGTERM')})`);
      return { ok: running.length ? `terminate: ${running.join(', ')}` : 'terminate: tasks unknown' };
    }
    worker.log.info(`Tasks flagged as revoked: ${taskIds.join(', ')}`);
    return { ok: `tasks ${taskIds.join(', ')} flagged as revoked` };
  };

  // Celery answers these with `nok(...)` while autoscaling: the autoscaler owns the pool's size then.
  const poolResize = (verb: 'grow' | 'shrink', args: Record<string, unknown>): unknown => {
    if (worker.autoscaler) return { error: `pool_${verb} is not supported with autoscale. Adjust autoscale range instead.` };
    const n = count(args['n'], 1);
    if (verb === 'grow') worker.growPool(n);
    else worker.shrinkPool(Math.min(n, Math.max(0, worker.pool.limit - 1))); // keep one slot: a pool of none runs nothing
    return { ok: `pool will ${verb}` };
  };

  return {
    ping: () => ({ ok: 'pong' }),
    pool_grow: (args) => poolResize('grow', args),
    pool_shrink: (args) => poolResize('shrink', args),
    autoscale: (args) => {
      const autoscaler = worker.autoscaler;
      if (!autoscaler) throw valueError('Autoscale not enabled');
      const [max, min] = autoscaler.update(optionalCount(args['max']), optionalCount(args['min']));
      return { ok: `autoscale now max=${max} min=${min}` };
    },
    revoke,
    terminate: (args) => revoke({ ...args, terminate: true }),
    shutdown: () => {
      worker.log.warning('shutdown requested by remote control');
      void worker.stop();
      return NO_REPLY;
    },
  };
}

/** An error replied as Python's `ValueError('…')`, as Celery's handlers raise it. */
function valueError(message: string): KqError {
  const error = new KqError(message);
  error.name = 'ValueError';
  return error;
}

/** Celery converts these arguments with `int()`: numbers and numeric strings. */
function optionalCount(value: unknown): number | null {
  if (value === undefined || value === null || value === '') return null;
  const n = typeof value === 'string' ? Number(value.trim()) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw valueError(`invalid literal for int(): ${JSON.stringify(value)}`);
  return n;
}

function count(value: unknown, fallback: number): number {
  return optionalCount(value) ?? fallback;
}
