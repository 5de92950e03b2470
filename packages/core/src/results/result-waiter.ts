import { OperationTimeout } from '../errors';
import type { WaitForResultOptions } from './result-backend';
import type { ResultMeta } from './result-meta';

/** One caller waiting for a task's result, as a backend files it where results arrive. */
export interface ResultWaiter {
  resolve(meta: ResultMeta): void;
  reject(error: unknown): void;
}

/**
 * A `waitFor` for a backend that pushes: a promise settled once, by the waiter's `resolve`/`reject` (called by
 * whoever the result reaches) or with an `OperationTimeout` when `timeoutMs` passes or `signal` aborts. `register`
 * files the waiter and returns what takes it out again, run once it settles; `begin`, run once the waiter is armed
 * (not when the signal had already aborted), starts looking for a result already stored.
 */
export function waitForResultMeta(
  taskId: string,
  options: WaitForResultOptions,
  register: (waiter: ResultWaiter) => () => void,
  begin?: (waiter: ResultWaiter) => void,
): Promise<ResultMeta> {
  return new Promise<ResultMeta>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    let unregister: () => void = () => undefined;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      unregister();
      return true;
    };
    const waiter: ResultWaiter = {
      resolve: (meta) => {
        if (finish()) resolve(meta);
      },
      reject: (error) => {
        if (finish()) reject(error);
      },
    };
    const onAbort = (): void => waiter.reject(new OperationTimeout(`Stopped waiting for the result of task ${taskId}.`));
    unregister = register(waiter);
    if (options.signal?.aborted) {
      onAbort();
      return;
    }
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(() => waiter.reject(new OperationTimeout(`The result of task ${taskId} was not ready within ${options.timeoutMs} ms.`)), options.timeoutMs);
    }
    begin?.(waiter);
  });
}
