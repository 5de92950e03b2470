import { isUnreadableContent, type Delivery, type ResultMeta } from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import type { Logger } from '../log/logger';
import { type TaskMessage } from '../protocol/index';
import { exceptionInfo, formatDateDone } from '../results/index';

type FailureTarget = Pick<TaskMessage, 'id' | 'name' | 'correlationId' | 'replyTo'>;
type ExceptionRecord = { exc_type: string; exc_message: unknown[]; exc_module: string };

/**
 * Stores FAILURE for a task message that never became a run (unknown task, delivered too often, unreadable body),
 * so a caller waiting on its result learns why. Never throws: a backend that cannot store it is logged.
 */
export async function storeFailure(app: AppContract, log: Logger, message: FailureTarget, info: ExceptionRecord, extended: Partial<ResultMeta> = {}): Promise<void> {
  try {
    const backend = await app.backend();
    await backend?.store(
      {
        status: 'FAILURE',
        result: info,
        traceback: null,
        children: [],
        date_done: formatDateDone(new Date(), app.conf.resultDateDone),
        ...(app.conf.resultExtended ? extended : {}),
        task_id: message.id,
      },
      { expiresMs: app.conf.resultExpires * 1000, ...(message.replyTo ? { replyTo: message.replyTo } : {}), correlationId: message.correlationId },
    );
  } catch (error) {
    log.error(`Could not store the failure of ${message.name}[${message.id}]: ${String(error)}`);
  }
}

/** An unknown task's FAILURE as Celery's consumer stores it: its request knows only the name (extended fields null). */
export function storeNotRegistered(app: AppContract, log: Logger, message: FailureTarget): Promise<void> {
  const info = { exc_type: 'NotRegistered', exc_message: [message.name], exc_module: 'celery.exceptions' };
  return storeFailure(app, log, message, info, { name: null, args: null, kwargs: null, worker: null, retries: null, queue: null });
}

/**
 * A task message whose body was refused (content type not accepted, signature not verified, over `maxMessageSize`) or
 * could not be decoded still names its task id in its headers: its FAILURE (`ContentDisallowed` / `SecurityError` /
 * `MessageTooLarge` / `DecodeError`) is stored. (Celery only logs these; kq does better — see docs/wire-notes.md.)
 */
export async function storeUnreadable(app: AppContract, log: Logger, delivery: Delivery, reason: Error): Promise<void> {
  const id = delivery.headers['id'];
  if (typeof id !== 'string' || id === '') return;
  if (!isUnreadableContent(reason)) return;
  const { correlationId, replyTo } = delivery.properties;
  await storeFailure(
    app,
    log,
    { id, name: String(delivery.headers['task'] ?? '?'), correlationId: correlationId ?? id, replyTo: replyTo ?? null },
    exceptionInfo(reason),
  );
}
