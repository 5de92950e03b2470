import {
  KqError,
  isExceptionInfo,
  isReadyState,
  type ExceptionInfo,
  type ResultBackend,
  type ResultMeta,
  type TaskState,
  type WaitForResultOptions,
} from '@kq/core';
import { TaskFailedError, TaskRevokedError } from '../errors';
import { formatExceptionMessage } from './exception-info';

export interface GetResultOptions {
  /** Give up after this long (ms) with core's `OperationTimeout`. Default: wait as long as it takes. */
  timeout?: number;
  /**
   * Throw when the task failed (`TaskFailedError`) or was revoked (`TaskRevokedError`). Default true; with false the
   * stored exception info is returned instead.
   */
  propagate?: boolean;
  signal?: AbortSignal;
}

/**
 * A handle on a task's result, as Celery's `AsyncResult`: `state()`, `ready()`, `get()`... read the configured result
 * backend (Redis, RPC, memory), so they see results stored by kq and by Python workers alike. `get()` waits the way
 * the backend allows: woken by a push where it can (Redis PUB/SUB, RPC replies), not by polling.
 */
export class AsyncResult<R = unknown> {
  readonly id: string;
  readonly backend: ResultBackend | null;

  constructor(id: string, backend: ResultBackend | null) {
    this.id = id;
    this.backend = backend;
  }

  /** The stored state; `PENDING` when nothing is known (not sent, not started yet, expired, or forgotten). */
  async state(): Promise<TaskState> {
    return (await this.meta())?.status ?? 'PENDING';
  }

  /** True once the task finished: SUCCESS, FAILURE, REVOKED or REJECTED. */
  async ready(): Promise<boolean> {
    return isReadyState(await this.state());
  }

  async successful(): Promise<boolean> {
    return (await this.state()) === 'SUCCESS';
  }

  async failed(): Promise<boolean> {
    return (await this.state()) === 'FAILURE';
  }

  /** Everything the backend stores for the task (Celery's meta), or null. */
  async meta(): Promise<ResultMeta | null> {
    return this.#requireBackend('read its state').get(this.id);
  }

  /**
   * Waits for the task to finish and returns its return value. A failure throws `TaskFailedError` (with the remote
   * exception's type, message and traceback), a revoked task `TaskRevokedError`, a timeout core's `OperationTimeout`.
   * With `propagate: false`, a task that did not succeed gives its exception info instead of throwing.
   */
  get(options?: GetResultOptions & { propagate?: true }): Promise<R>;
  get(options: GetResultOptions & { propagate: false }): Promise<R | ExceptionInfo>;
  get(options?: GetResultOptions): Promise<R | ExceptionInfo>;
  async get(options: GetResultOptions = {}): Promise<R | ExceptionInfo> {
    const backend = this.#requireBackend('wait for its result');
    const waitOptions: WaitForResultOptions = {};
    if (options.timeout !== undefined) waitOptions.timeoutMs = options.timeout;
    if (options.signal !== undefined) waitOptions.signal = options.signal;
    const meta = await backend.waitFor(this.id, waitOptions);
    if (meta.status === 'SUCCESS') return meta.result as R;
    const info = failureInfo(meta);
    if (options.propagate === false) return info;
    if (meta.status === 'REVOKED') {
      const reason = formatExceptionMessage(info.exc_message) || 'revoked';
      throw new TaskRevokedError(`Task ${this.id} was revoked (${reason}); it has no result.`);
    }
    throw new TaskFailedError(this.id, info.exc_type, info.exc_message, info.exc_module, meta.traceback);
  }

  /** Deletes the stored result (Celery's `forget`). */
  async forget(): Promise<void> {
    await this.#requireBackend('forget its result').forget(this.id);
  }

  /** Serializes as the task id, as Celery's result tuples carry it. */
  toJSON(): string {
    return this.id;
  }

  toString(): string {
    return this.id;
  }

  #requireBackend(what: string): ResultBackend {
    if (this.backend) return this.backend;
    throw new KqError(
      `Cannot ${what} for task ${this.id}: no result backend is configured. Configure one on the app, e.g. ` +
        `new App('proj', { backend: 'redis://127.0.0.1:6379/0' }) (or 'rpc://' to get results back over the broker).`,
    );
  }
}

/** The exception info of a state that is not SUCCESS; a stored value that is not one is described as one. */
function failureInfo(meta: ResultMeta): ExceptionInfo {
  if (isExceptionInfo(meta.result)) return meta.result;
  if (meta.status === 'REVOKED') return { exc_type: 'TaskRevokedError', exc_message: ['revoked'], exc_module: 'celery.exceptions' };
  const detail = meta.result === null || meta.result === undefined ? [] : [typeof meta.result === 'string' ? meta.result : JSON.stringify(meta.result)];
  return { exc_type: meta.status === 'REJECTED' ? 'Reject' : 'Exception', exc_message: detail, exc_module: meta.status === 'REJECTED' ? 'celery.exceptions' : 'builtins' };
}
