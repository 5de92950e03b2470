import { ContentDisallowed, DecodeError, MessageTooLarge, type Delivery, type ResultMeta } from '@kq/core';
import type { AppContract } from '../app-contract';
import type { Logger } from '../logger';
import { type TaskMessage } from '../protocol/index';
import { formatDateDone } from '../results/index';

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

/**
 * A task message whose body was refused (content type not accepted, over `maxMessageSize`) or could not be decoded
 * still names its task id in its headers: its FAILURE (`ContentDisallowed` / `DecodeError` / `MessageTooLarge`) is
 * stored. (Celery only logs these; kq does better — see docs/wire-notes.md.)
 */
export async function storeUnreadable(app: AppContract, log: Logger, delivery: Delivery, reason: Error): Promise<void> {
  const id = delivery.headers['id'];
  if (typeof id !== 'string' || id === '') return;
  if (!(reason instanceof ContentDisallowed) && !(reason instanceof DecodeError) && !(reason instanceof MessageTooLarge)) return;
  const { correlationId, replyTo } = delivery.properties;
  await storeFailure(
    app,
    log,
    { id, name: String(delivery.headers['task'] ?? '?'), correlationId: correlationId ?? id, replyTo: replyTo ?? null },
    // MessageTooLarge is kq's own: Python has no such class, and Celery rebuilds one under that name from it.
    { exc_type: reason.name, exc_message: [reason.message], exc_module: reason instanceof MessageTooLarge ? 'kq.exceptions' : 'kombu.exceptions' },
  );
}
