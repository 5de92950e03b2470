import {
  brandClass,
  KqError,
  isExceptionInfo,
  isReadyState,
  type ExceptionInfo,
  type ResultBackend,
  type ResultMeta,
  type ResultTuple,
  type TaskState,
  type WaitForResultOptions,
} from '@kq/core';
import { TaskFailedError, TaskRevokedError } from '../errors/errors';
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

/** A result in a graph of results (a task's or a group's): what parents and saved groups need of it. */
export interface ResultNode {
  readonly id: string;
  asTuple(): ResultTuple;
}

/** Something that gives the result backend when asked: an app, whose backend is created on first use. */
export interface ResultBackendSource {
  backend(): Promise<ResultBackend | null>;
}

/**
 * A handle on a task's result, as Celery's `AsyncResult`: `state()`, `ready()`, `get()`... read the configured result
 * backend (Redis, RPC, memory), so they see results stored by kq and by Python workers alike. `get()` waits the way
 * the backend allows: woken by a push where it can (Redis PUB/SUB, RPC replies), not by polling.
 */
export class AsyncResult<R = unknown> {
  readonly id: string;
  /** The result this one's task was sent by, where known: a chain's previous step, a chord's header (a group). */
  parent: ResultNode | null = null;
  readonly #backend: ResultBackend | null | ResultBackendSource;

  /** `backend` may be given as its source (an app): it is then asked when the result is first read. */
  constructor(id: string, backend: ResultBackend | null | ResultBackendSource) {
    this.id = id;
    this.#backend = backend;
  }

  /** The result backend this handle reads, resolved from its source. */
  async resultBackend(): Promise<ResultBackend | null> {
    const backend = this.#backend;
    if (backend !== null && isBackendSource(backend)) return backend.backend();
    return backend;
  }

  /** Celery's `as_tuple()`: `[[id, parent], null]`, the form saved groups and `celery.chord_unlock` carry. */
  asTuple(): ResultTuple {
    return [[this.id, this.parent ? this.parent.asTuple() : null], null];
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
    return (await this.#requireBackend('read its state')).get(this.id);
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
    const backend = await this.#requireBackend('wait for its result');
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
    await (await this.#requireBackend('forget its result')).forget(this.id);
  }

  /** Serializes as the task id, as Celery's result tuples carry it. */
  toJSON(): string {
    return this.id;
  }

  toString(): string {
    return this.id;
  }

  async #requireBackend(what: string): Promise<ResultBackend> {
    const backend = await this.resultBackend();
    if (backend) return backend;
    throw new KqError(
      `Cannot ${what} for task ${this.id}: no result backend is configured. Configure one on the app, e.g. ` +
        `new App('proj', { backend: 'redis://127.0.0.1:6379/0' }) (or 'rpc://' to get results back over the broker).`,
    );
  }
}
brandClass(AsyncResult, '@kq/worker:AsyncResult');

/** The exception info of a state that is not SUCCESS; a stored value that is not one is described as one. */
function failureInfo(meta: ResultMeta): ExceptionInfo {
  if (isExceptionInfo(meta.result)) return meta.result;
  if (meta.status === 'REVOKED') return { exc_type: 'TaskRevokedError', exc_message: ['revoked'], exc_module: 'celery.exceptions' };
  const detail = meta.result === null || meta.result === undefined ? [] : [typeof meta.result === 'string' ? meta.result : JSON.stringify(meta.result)];
  return { exc_type: meta.status === 'REJECTED' ? 'Reject' : 'Exception', exc_message: detail, exc_module: meta.status === 'REJECTED' ? 'celery.exceptions' : 'builtins' };
}

function isBackendSource(value: ResultBackend | ResultBackendSource): value is ResultBackendSource {
  return typeof (value as Partial<ResultBackendSource>).backend === 'function' && typeof (value as Partial<ResultBackend>).waitFor !== 'function';
}
