import { parseIsoDatetime, pythonRepr, type ResultMeta } from '@kq/core';
import type { ApplyOptions, AsyncResult } from '@kq/worker';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DashboardView } from '../dashboard-view';
import { field, numberField } from './request-fields';

/** Flower's task routes: list, types, info, result, and apply / async-apply / send-task. */
export function registerFlowerTaskRoutes(server: FastifyInstance, dashboard: DashboardView): void {
  server.get('/api/tasks', async (request, reply) => {
    const limit = numberField(request, 'limit');
    const offset = numberField(request, 'offset');
    if ((limit !== undefined && !Number.isInteger(limit)) || (offset !== undefined && !Number.isInteger(offset))) {
      return reply.code(400).send({ error: 'limit and offset must be whole numbers' });
    }
    const optional = (name: string): string | undefined => field(request, name);
    const tasks = dashboard.state.queryTasks({
      ...(limit === undefined ? {} : { limit }),
      ...(offset === undefined ? {} : { offset }),
      ...definedOnly({
        sortBy: optional('sort_by'),
        workername: optional('workername'),
        taskname: optional('taskname'),
        state: optional('state'),
        receivedStart: optional('received_start'),
        receivedEnd: optional('received_end'),
        search: optional('search'),
      }),
    });
    // An object keyed by id, in the order chosen (JSON keeps insertion order for non-numeric keys).
    return Object.fromEntries(tasks.map((task) => [task.uuid, task]));
  });

  server.get('/api/task/types', async () => ({ 'task-types': dashboard.state.taskTypes() }));

  server.get<{ Params: { id: string } }>('/api/task/info/:id', async (request, reply) => {
    const task = dashboard.state.task(request.params.id);
    if (!task) return reply.code(404).send({ error: `Unknown task '${request.params.id}'` });
    return task;
  });

  server.get<{ Params: { id: string } }>('/api/task/result/:id', async (request, reply) => {
    const timeout = numberField(request, 'timeout');
    const result = await dashboard.app.asyncResult(request.params.id);
    if (!(await result.resultBackend())) return reply.code(503).send({ error: 'no result backend is configured' });
    if (timeout) await result.get({ timeout: timeout * 1000, propagate: false }).catch(() => undefined);
    return resultResponse(result, await result.meta());
  });

  const send = (wait: boolean) => async (request: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply) => {
    const parsed = taskArguments(request.body);
    if (typeof parsed === 'string') return reply.code(400).send({ error: parsed });
    const result = await dashboard.app.sendTask(request.params.name, parsed.args, parsed.kwargs, parsed.options);
    if (!(await result.resultBackend())) return { 'task-id': result.id };
    // Flower waits for ever; here a task nobody runs answers with its state after `timeout` seconds (default 30).
    if (wait) await result.get({ propagate: false, timeout: (numberField(request, 'timeout') ?? 30) * 1000 }).catch(() => undefined);
    return resultResponse(result, await result.meta(), !wait);
  };
  server.post('/api/task/apply/:name', send(true));
  server.post('/api/task/async-apply/:name', send(false));
  server.post('/api/task/send-task/:name', send(false));
}

/** Flower's `{task-id, state, result[, traceback]}`; a failure's result is the exception's repr, as Flower's. */
function resultResponse(result: AsyncResult<unknown>, meta: ResultMeta | null, stateOnly = false): Record<string, unknown> {
  const state = meta?.status ?? 'PENDING';
  const response: Record<string, unknown> = { 'task-id': result.id, state };
  if (stateOnly || !meta || !['SUCCESS', 'FAILURE', 'REVOKED'].includes(state)) return response;
  if (state === 'FAILURE' || state === 'REVOKED') {
    const error = meta.result as { exc_type?: string; exc_message?: unknown[] } | null;
    response['result'] = error?.exc_type ? `${error.exc_type}(${(error.exc_message ?? []).map((part) => pythonRepr(part)).join(', ')})` : meta.result;
    response['traceback'] = meta.traceback;
  } else {
    response['result'] = meta.result;
  }
  return response;
}

/** Flower's request body: `{args, kwargs, ...options}` (countdown, eta, expires, queue, priority, ...). */
function taskArguments(body: unknown): { args: unknown[]; kwargs: Record<string, unknown>; options: ApplyOptions } | string {
  if (body === undefined || body === null || body === '') return { args: [], kwargs: {}, options: {} };
  if (typeof body !== 'object' || Array.isArray(body)) return 'invalid options';
  const { args = [], kwargs = {}, ...rest } = body as Record<string, unknown>;
  if (!Array.isArray(args)) return 'args must be an array';
  if (typeof kwargs !== 'object' || kwargs === null || Array.isArray(kwargs)) return 'kwargs must be an object';
  const options: ApplyOptions = {};
  if (rest['countdown'] !== undefined) options.countdown = Number(rest['countdown']);
  if (typeof rest['eta'] === 'string') {
    // Flower's format, `2026-11-21 13:12:05.000000`, naive: UTC; an ISO 8601 offset is honoured.
    const eta = parseIsoDatetime(rest['eta']);
    if ('invalid' in eta) return `eta ${JSON.stringify(rest['eta'])}: ${eta.invalid}`;
    options.eta = eta.date;
  }
  if (rest['expires'] !== undefined) options.expires = typeof rest['expires'] === 'number' || /^\d+(\.\d+)?$/.test(String(rest['expires'])) ? Number(rest['expires']) : String(rest['expires']);
  if (typeof rest['queue'] === 'string') options.queue = rest['queue'];
  if (typeof rest['routing_key'] === 'string') options.routingKey = rest['routing_key'];
  if (typeof rest['exchange'] === 'string') options.exchange = rest['exchange'];
  if (typeof rest['priority'] === 'number') options.priority = rest['priority'];
  if (typeof rest['task_id'] === 'string') options.taskId = rest['task_id'];
  return { args, kwargs: kwargs as Record<string, unknown>, options };
}

function definedOnly<T extends Record<string, string | undefined>>(values: T): { [K in keyof T]?: string } {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as { [K in keyof T]?: string };
}
