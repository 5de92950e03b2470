import { parseIsoDatetime } from '@kq/core';
import type { ClusterTask } from '@kq/worker';

/** A task as Flower's API returns it (`tasks.as_dict`), with the worker as its host name. */
export interface FlowerTask {
  uuid: string;
  name: string | null;
  state: string;
  received: number | null;
  sent: number | null;
  started: number | null;
  rejected: number | null;
  succeeded: number | null;
  failed: number | null;
  retried: number | null;
  revoked: number | null;
  args: string | null;
  kwargs: string | null;
  eta: string | null;
  expires: string | null;
  retries: number | null;
  worker: string | null;
  result: string | null;
  exception: string | null;
  timestamp: number | null;
  runtime: number | null;
  traceback: string | null;
  exchange: string | null;
  routing_key: string | null;
  clock: number;
  client: string | null;
  root_id: string | null;
  parent_id: string | null;
  children: string[];
}

const text = (value: unknown): string | null => (value === undefined || value === null ? null : typeof value === 'string' ? value : JSON.stringify(value));
const number = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/** Flower's shape of one task; `children` are the ids of the tasks whose events named it as their parent. */
export function flowerTask(task: ClusterTask, children: readonly string[] = []): FlowerTask {
  const f = task.fields;
  const time = (subject: string): number | null => task.times[subject] ?? null;
  return {
    uuid: task.uuid,
    name: task.name,
    state: task.state,
    received: time('received'),
    sent: time('sent'),
    started: time('started'),
    rejected: time('rejected'),
    succeeded: time('succeeded'),
    failed: time('failed'),
    retried: time('retried'),
    revoked: time('revoked'),
    args: text(f['args']),
    kwargs: text(f['kwargs']),
    eta: text(f['eta']),
    expires: text(f['expires']),
    retries: number(f['retries']),
    worker: task.worker,
    result: text(f['result']),
    exception: text(f['exception']),
    timestamp: task.timestamp,
    runtime: number(f['runtime']),
    traceback: text(f['traceback']),
    exchange: text(f['exchange']),
    routing_key: text(f['routing_key']),
    clock: task.clock,
    client: task.client,
    root_id: text(f['root_id']),
    parent_id: text(f['parent_id']),
    children: [...children],
  };
}

/** Flower's `/api/tasks` query. */
export interface TaskQuery {
  limit?: number;
  offset?: number;
  /** `name`, `state`, `received`, `started` (or any field), `-` first for descending. */
  sortBy?: string;
  workername?: string;
  taskname?: string;
  state?: string;
  /** `YYYY-MM-DD HH:MM` (UTC), as Flower's. */
  receivedStart?: string;
  receivedEnd?: string;
  /** Words that must all appear; `args:x`, `kwargs:x`, `result:x`, `state:x`, `name:x`, `uuid:x`, `worker:x` narrow a word to a field. */
  search?: string;
}

const SEARCH_FIELDS = ['args', 'kwargs', 'result', 'state', 'name', 'uuid', 'worker', 'exception'] as const;
type SearchField = (typeof SEARCH_FIELDS)[number];

/** What the query reads of a task: the few fields it filters and sorts on (cheap to read off a ClusterTask). */
export interface QueryableTask {
  readonly uuid: string;
  readonly name: string | null;
  readonly state: string;
  readonly worker: string | null;
  readonly received: number | null;
  /** A field's text for search and sorting (args, kwargs, result, ...). */
  field(name: string): unknown;
}

/** A Flower-shaped task as something the query reads. */
export function queryableFlowerTask(task: FlowerTask): QueryableTask {
  return { uuid: task.uuid, name: task.name, state: task.state, worker: task.worker, received: task.received, field: (name) => task[name as keyof FlowerTask] };
}

/** A task of the event state as something the query reads, without building its Flower shape. */
export function queryableClusterTask(task: ClusterTask): QueryableTask {
  return {
    uuid: task.uuid,
    name: task.name,
    state: task.state,
    worker: task.worker,
    received: task.times['received'] ?? null,
    field: (name) => {
      if (name === 'uuid' || name === 'state' || name === 'worker' || name === 'name') return task[name];
      if (name in task.times) return task.times[name];
      const value = task.fields[name];
      return value === undefined || value === null || typeof value === 'string' || typeof value === 'number' ? value : JSON.stringify(value);
    },
  };
}

/**
 * Filters, sorts and pages tasks as Flower's `iter_tasks` does ('All' means no filter); `tasks` come most recent
 * first. Only what passes is sorted, so a page of a large state costs one pass over it.
 */
export function queryTasks<T extends QueryableTask>(tasks: Iterable<T>, query: TaskQuery): T[] {
  const all = (value: string | undefined): string | undefined => (value === undefined || value === '' || value === 'All' ? undefined : value);
  const worker = all(query.workername);
  const name = all(query.taskname);
  const state = all(query.state);
  const start = query.receivedStart ? parseUtcMinute(query.receivedStart) : undefined;
  const end = query.receivedEnd ? parseUtcMinute(query.receivedEnd) : undefined;
  const terms = (query.search ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((term) => {
      const colon = term.indexOf(':');
      const field = colon > 0 ? term.slice(0, colon) : '';
      return (SEARCH_FIELDS as readonly string[]).includes(field) ? { field: field as SearchField, value: term.slice(colon + 1).toLowerCase() } : { field: undefined, value: term.toLowerCase() };
    });
  const everywhere: readonly SearchField[] = ['name', 'uuid', 'args', 'kwargs', 'result', 'exception', 'worker'];
  const offset = Math.max(0, query.offset ?? 0);
  const limit = query.limit === undefined ? Infinity : Math.max(0, query.limit);
  const result: T[] = [];
  for (const task of tasks) {
    if (worker !== undefined && task.worker !== worker) continue;
    if (name !== undefined && task.name !== name) continue;
    if (state !== undefined && task.state !== state) continue;
    if (start !== undefined && (task.received === null || task.received < start)) continue;
    if (end !== undefined && (task.received === null || task.received > end)) continue;
    const matches = terms.every(({ field, value }) =>
      (field ? [field] : everywhere).some((key) => {
        const item = task.field(key);
        return item !== null && item !== undefined && String(item).toLowerCase().includes(value);
      }),
    );
    if (!matches) continue;
    result.push(task);
    // Unsorted, a page is done once it is full.
    if (!query.sortBy && result.length >= offset + limit) break;
  }
  if (query.sortBy) {
    const descending = query.sortBy.startsWith('-');
    const key = descending ? query.sortBy.slice(1) : query.sortBy;
    result.sort((a, b) => {
      const x = a.field(key) as string | number | null | undefined;
      const y = b.field(key) as string | number | null | undefined;
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * (descending ? -1 : 1);
    });
  }
  return result.slice(offset, limit === Infinity ? undefined : offset + limit);
}

/** Flower's `received_start`/`received_end` (`2026-01-01 10:30`, naive: UTC), or any ISO 8601 datetime, in seconds. */
function parseUtcMinute(value: string): number | undefined {
  const parsed = parseIsoDatetime(value.trim());
  return 'date' in parsed ? parsed.date.getTime() / 1000 : undefined;
}
