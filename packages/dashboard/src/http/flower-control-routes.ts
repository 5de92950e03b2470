import type { MailboxReply } from '@kq/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DashboardView } from '../dashboard-view';
import { booleanField, field, numberField } from './request-fields';

type WorkerRequest = FastifyRequest<{ Params: { worker: string } }>;

/**
 * Flower's control routes, with its messages: worker shutdown, pool restart/grow/shrink/autoscale, add/cancel
 * consumer; task revoke (and terminate), abort, time limit and rate limit. An unknown worker is 404, a refusal 403
 * with the worker's reason.
 */
export function registerFlowerControlRoutes(server: FastifyInstance, dashboard: DashboardView): void {
  const known = (name: string): boolean => dashboard.state.inspected.has(name) || dashboard.state.cluster.workers.has(name);
  // What a command changes (pool size, limits, queues) no event reports: the next inspect round asks the worker again.
  const command = async (worker: string, method: string, args: Record<string, unknown> = {}): Promise<MailboxReply[]> => {
    dashboard.inspector.changed(worker);
    try {
      return await dashboard.app.control.broadcast(method, { arguments: args, reply: true, timeout: 1000, destination: [worker] });
    } finally {
      dashboard.inspector.changed(worker);
    }
  };
  /** The worker's `{ok: …}` text, or undefined with the reply's `error` when it refused. */
  const outcome = (replies: MailboxReply[], worker: string): { ok?: string; error: string } => {
    const value = replies.map((reply) => reply[worker]).find((entry) => entry !== undefined) as { ok?: unknown; error?: unknown } | undefined;
    if (value && 'ok' in value) return { ok: String(value.ok), error: '' };
    return { error: value && 'error' in value ? String(value.error) : 'Unknown reason' };
  };
  const forWorker =
    (run: (request: WorkerRequest, reply: FastifyReply, worker: string) => Promise<unknown>) =>
    async (request: WorkerRequest, reply: FastifyReply): Promise<unknown> => {
      const { worker } = request.params;
      if (!known(worker)) return reply.code(404).send({ error: `Unknown worker '${worker}'` });
      return run(request, reply, worker);
    };

  server.post(
    '/api/worker/shutdown/:worker',
    forWorker(async (_request, _reply, worker) => {
      await dashboard.app.control.broadcast('shutdown', { destination: [worker] });
      return { message: 'Shutting down!' };
    }),
  );
  server.post(
    '/api/worker/pool/restart/:worker',
    forWorker(async (_request, reply, worker) => {
      const result = outcome(await command(worker, 'pool_restart', { reload: false }), worker);
      return result.ok !== undefined ? { message: `Restarting '${worker}' worker's pool` } : reply.code(403).send(`Failed to restart the '${worker}' pool: ${result.error}`);
    }),
  );
  for (const [path, method, verb] of [
    ['grow', 'pool_grow', 'Growing'],
    ['shrink', 'pool_shrink', 'Shrinking'],
  ] as const) {
    server.post(
      `/api/worker/pool/${path}/:worker`,
      forWorker(async (request, reply, worker) => {
        const n = numberField(request, 'n') ?? 1;
        if (!Number.isInteger(n)) return reply.code(400).send({ error: 'n must be a whole number' });
        const result = outcome(await command(worker, method, { n }), worker);
        return result.ok !== undefined
          ? { message: `${verb} '${worker}' worker's pool by ${n}` }
          : reply.code(403).send(`Failed to ${path} '${worker}' worker's pool: ${result.error}`);
      }),
    );
  }
  server.post(
    '/api/worker/pool/autoscale/:worker',
    forWorker(async (request, reply, worker) => {
      const min = numberField(request, 'min');
      const max = numberField(request, 'max');
      if (min === undefined || max === undefined || !Number.isInteger(min) || !Number.isInteger(max)) return reply.code(400).send({ error: 'min and max are required whole numbers' });
      const result = outcome(await command(worker, 'autoscale', { min, max }), worker);
      return result.ok !== undefined
        ? { message: `Autoscaling '${worker}' worker (min=${min}, max=${max})` }
        : reply.code(403).send(`Failed to autoscale '${worker}' worker: ${result.error}`);
    }),
  );
  for (const [path, method, what] of [
    ['add-consumer', 'add_consumer', 'add'],
    ['cancel-consumer', 'cancel_consumer', 'cancel'],
  ] as const) {
    server.post(
      `/api/worker/queue/${path}/:worker`,
      forWorker(async (request, reply, worker) => {
        const queue = field(request, 'queue');
        if (!queue) return reply.code(400).send({ error: 'queue is required' });
        const result = outcome(await command(worker, method, { queue }), worker);
        dashboard.inspector.queuesChanged();
        return result.ok !== undefined
          ? { message: result.ok }
          : reply.code(403).send(`Failed to ${what} '${queue}' consumer ${what === 'add' ? 'to' : 'from'} '${worker}' worker: ${result.error}`);
      }),
    );
  }

  server.post<{ Params: { id: string } }>('/api/task/revoke/:id', async (request) => {
    const terminate = booleanField(request, 'terminate');
    const signal = field(request, 'signal') ?? 'SIGTERM';
    await dashboard.app.control.revoke(request.params.id, { terminate, signal });
    // Every worker's `revoked` list grew, which no event reports.
    dashboard.inspector.changed();
    return { message: `Revoked '${request.params.id}'` };
  });
  // kq has no AbortableTask: an abort is a revoke that asks running code to stop through its signal (terminate).
  server.post<{ Params: { id: string } }>('/api/task/abort/:id', async (request) => {
    await dashboard.app.control.revoke(request.params.id, { terminate: true, signal: 'SIGTERM' });
    dashboard.inspector.changed();
    return { message: `Aborted '${request.params.id}'` };
  });
  server.post<{ Params: { name: string } }>('/api/task/timeout/:name', async (request, reply) => {
    const worker = field(request, 'workername');
    if (!worker || !known(worker)) return reply.code(404).send({ error: `Unknown worker '${worker ?? ''}'` });
    const hard = numberField(request, 'hard');
    const soft = numberField(request, 'soft');
    const result = outcome(await command(worker, 'time_limit', { task_name: request.params.name, hard: hard ?? null, soft: soft ?? null }), worker);
    return result.ok !== undefined ? { message: result.ok } : reply.code(403).send(`Failed to set timeouts: '${result.error}'`);
  });
  server.post<{ Params: { name: string } }>('/api/task/rate-limit/:name', async (request, reply) => {
    const worker = field(request, 'workername');
    const rate = field(request, 'ratelimit');
    if (!worker || !known(worker)) return reply.code(404).send({ error: `Unknown worker '${worker ?? ''}'` });
    if (rate === undefined) return reply.code(400).send({ error: 'ratelimit is required' });
    const result = outcome(await command(worker, 'rate_limit', { task_name: request.params.name, rate_limit: rate }), worker);
    return result.ok !== undefined ? { message: result.ok } : reply.code(403).send(`Failed to set rate limit: '${result.error}'`);
  });
}
