import type { Task } from '../task/task';
import { pythonStr } from '../events/python-str';
import { compareCodePoints } from './code-point-order';

/** Celery's `DEFAULT_TASK_INFO_ITEMS` for `inspect registered`. */
export const DEFAULT_TASK_INFO_ITEMS: readonly string[] = ['exchange', 'routing_key', 'rate_limit'];

/** Remote changes a worker applied to a task (`rate_limit`, `time_limit` commands), shown as its attributes. */
export interface TaskOverrides {
  rateLimit?: string | number | null;
  timeLimit?: number | null;
  softTimeLimit?: number | null;
}

/**
 * `inspect registered`: task names in Python's sort order, each followed by ` [attr=value …]` for the requested
 * Celery task attributes that are set (`proj.add [rate_limit=10/m]`). Names starting with `celery.` are Celery's
 * built-ins and only listed with `builtins`.
 */
export function registeredTasks(
  tasks: ReadonlyMap<string, Task<never[], unknown>>,
  options: { taskinfoitems?: unknown; builtins?: unknown; overrides?: ReadonlyMap<string, TaskOverrides> } = {},
): string[] {
  const items = Array.isArray(options.taskinfoitems) && options.taskinfoitems.length > 0
    ? options.taskinfoitems.filter((item): item is string => typeof item === 'string')
    : DEFAULT_TASK_INFO_ITEMS;
  const names = [...tasks.keys()].filter((name) => options.builtins === true || !name.startsWith('celery.')).sort(compareCodePoints);
  return names.map((name) => {
    const task = tasks.get(name) as Task<never[], unknown>;
    const overrides = options.overrides?.get(name) ?? {};
    const parts: string[] = [];
    for (const item of items) {
      const value = taskAttribute(task, item, overrides);
      if (value !== null && value !== undefined) parts.push(`${item}=${pythonStr(value)}`);
    }
    return parts.length > 0 ? `${name} [${parts.join(' ')}]` : name;
  });
}

/** A kq task's value for a Celery task attribute name (`routing_key` → `routingKey`), or undefined. */
export function taskAttribute(task: Task<never[], unknown>, attribute: string, overrides: TaskOverrides = {}): unknown {
  const o = task.options;
  switch (attribute) {
    case 'name':
      return task.name;
    case 'rate_limit':
      return overrides.rateLimit !== undefined ? overrides.rateLimit : o.rateLimit;
    case 'time_limit':
      return overrides.timeLimit !== undefined ? overrides.timeLimit : o.timeLimit;
    case 'soft_time_limit':
      return overrides.softTimeLimit !== undefined ? overrides.softTimeLimit : o.softTimeLimit;
    default: {
      const camel = attribute.replace(/_([a-z])/g, (_m, letter: string) => letter.toUpperCase());
      return (o as Record<string, unknown>)[camel];
    }
  }
}
