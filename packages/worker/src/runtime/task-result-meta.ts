import type { ResultMeta, TaskState } from '@kq/core';
import type { TaskMessage } from '../protocol/index';

/** Where and by whom a task ran: the extended fields (`result_extended`) beside its arguments. */
export interface ResultExtension {
  readonly worker: string;
  readonly queue: string;
}

/**
 * Celery's result meta of a task's state, its keys in the order Celery writes them (readers compare the stored
 * JSON): `group_id` and `parent_id` only when set, the extended fields with `extension`, `task_id` last. Built by
 * assignment, as it is once per task: no spread of a temporary object for each optional part.
 */
export function taskResultMeta(
  message: Pick<TaskMessage, 'id' | 'name' | 'group' | 'parentId' | 'args' | 'kwargs' | 'retries'>,
  status: TaskState,
  result: unknown,
  traceback: string | null,
  children: unknown[],
  dateDone: string | null,
  extension: ResultExtension | null,
): ResultMeta {
  const meta: Omit<ResultMeta, 'task_id'> & { task_id?: string } = { status, result, traceback, children, date_done: dateDone };
  if (message.group) meta.group_id = message.group;
  if (message.parentId) meta.parent_id = message.parentId;
  if (extension) {
    meta.name = message.name;
    meta.args = message.args;
    meta.kwargs = message.kwargs;
    meta.worker = extension.worker;
    meta.retries = message.retries;
    meta.queue = extension.queue;
  }
  meta.task_id = message.id;
  return meta as ResultMeta;
}
