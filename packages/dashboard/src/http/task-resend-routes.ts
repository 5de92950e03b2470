import type { ResultMeta } from '@kq/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DashboardView } from '../dashboard-view';
import type { InspectedWorker } from '../fleet-state';
import { resendPlan, type ResendPlan } from '../task-resend';
import { field } from './request-fields';

/**
 * Re-sending a task from its page (not Flower's: under `/dashboard/`): `GET …/resend` says whether it can be and why
 * not (the page's button), `POST …/resend` sends it again — same name, arguments and route, a new id. A `queue` field
 * sends it there instead (needed when the original queue is not known).
 */
export function registerTaskResendRoutes(server: FastifyInstance, dashboard: DashboardView): void {
  const plan = async (request: FastifyRequest<{ Params: { id: string } }>): Promise<ResendPlan> => {
    const task = dashboard.state.cluster.tasks.get(request.params.id);
    const workerQueues = task?.worker ? workerQueueNames(dashboard.state.inspected.get(task.worker)) : undefined;
    return resendPlan(task, task ? await storedMeta(dashboard, request.params.id) : null, { queue: field(request, 'queue') || undefined, workerQueues });
  };
  server.get<{ Params: { id: string } }>('/dashboard/task/:id/resend', async (request) => {
    const found = await plan(request);
    if (!found.ok) return { resendable: false, reason: found.reason, needs_queue: found.needsQueue === true };
    const { queue, exchange, routingKey } = found.options;
    return { resendable: true, source: found.source, queue: queue ?? null, exchange: exchange ?? null, routing_key: routingKey ?? null };
  });
  server.post<{ Params: { id: string } }>('/dashboard/task/:id/resend', async (request, reply) => {
    const found = await plan(request);
    if (!found.ok) return reply.code(dashboard.state.cluster.tasks.has(request.params.id) ? 409 : 404).send({ error: found.reason });
    const result = await dashboard.app.sendTask(found.name, found.args, found.kwargs, found.options);
    return { 'task-id': result.id, message: `Sent ${found.name} again as '${result.id}'` };
  });
}

/** The result backend's meta of a task (extended fields included when the worker stored them), or null without one. */
async function storedMeta(dashboard: DashboardView, id: string): Promise<ResultMeta | null> {
  const result = await dashboard.app.asyncResult(id);
  if (!(await result.resultBackend())) return null;
  return result.meta();
}

/** The queues a worker said it consumes (its last `active_queues` reply). */
function workerQueueNames(info: InspectedWorker | undefined): string[] | undefined {
  const queues = info?.['active_queues'];
  if (!Array.isArray(queues)) return undefined;
  return queues.flatMap((queue: unknown) => (queue && typeof queue === 'object' && typeof (queue as { name?: unknown }).name === 'string' ? [(queue as { name: string }).name] : []));
}
