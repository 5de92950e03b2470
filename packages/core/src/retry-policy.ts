import { setTimeout as sleep } from 'node:timers/promises';
import { isRecoverable } from './errors';

/**
 * Kombu's retry policy, in milliseconds: wait `intervalStart`, then grow by `intervalStep` up to `intervalMax`,
 * for at most `maxRetries` retries (undefined = forever). `jitter` adds up to that fraction of each wait at random,
 * so a fleet reconnecting after a broker restart does not stampede.
 */
export interface RetryPolicy {
  maxRetries?: number;
  intervalStart?: number;
  intervalStep?: number;
  intervalMax?: number;
  jitter?: number;
}

/** Celery's `task_publish_retry_policy` defaults. */
export const DEFAULT_RETRY_POLICY: Readonly<Required<Omit<RetryPolicy, 'maxRetries'>> & { maxRetries: number }> = {
  maxRetries: 3,
  intervalStart: 0,
  intervalStep: 200,
  intervalMax: 1000,
  jitter: 0,
};

/** The wait before retry number `attempt` (1-based). */
export function retryDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const start = policy.intervalStart ?? DEFAULT_RETRY_POLICY.intervalStart;
  const step = policy.intervalStep ?? DEFAULT_RETRY_POLICY.intervalStep;
  const max = policy.intervalMax ?? DEFAULT_RETRY_POLICY.intervalMax;
  const base = Math.min(start + step * (attempt - 1), max);
  const jitter = policy.jitter ?? 0;
  return Math.max(0, Math.round(base + base * jitter * random()));
}

export interface RetryHooks {
  /** Decides whether an error is worth retrying. Default: `isRecoverable`. */
  shouldRetry?: (error: unknown) => boolean;
  /** Called before each wait: repair state here (reconnect, re-declare). */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void | Promise<void>;
  signal?: AbortSignal;
}

/** Runs `operation`, retrying recoverable failures by `policy`. The last error is thrown when retries run out. */
export async function retryOver<T>(operation: (attempt: number) => Promise<T>, policy: RetryPolicy, hooks: RetryHooks = {}): Promise<T> {
  try {
    return await operation(0);
  } catch (error) {
    return retryAfterFailure(error, operation, policy, hooks);
  }
}

/**
 * Continues {@link retryOver} after a first attempt that the caller made itself and that failed with `error`: the
 * same checks, waits and attempts as if `retryOver` had made it. Lets a hot path skip the retry machinery until it
 * is needed.
 */
export async function retryAfterFailure<T>(
  error: unknown,
  operation: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  hooks: RetryHooks = {},
): Promise<T> {
  const shouldRetry = hooks.shouldRetry ?? isRecoverable;
  const maxRetries = policy.maxRetries;
  let failure = error;
  for (let attempt = 0; ; attempt++) {
    const exhausted = maxRetries !== undefined && attempt >= maxRetries;
    if (exhausted || !shouldRetry(failure) || hooks.signal?.aborted) throw failure;
    const delay = retryDelay(policy, attempt + 1);
    await hooks.onRetry?.(failure, attempt + 1, delay);
    // An abort ends the wait early (Node rejects with an AbortError); the attempt still runs, as it always has.
    if (delay > 0) await sleep(delay, undefined, { signal: hooks.signal }).catch(() => undefined);
    try {
      return await operation(attempt + 1);
    } catch (next) {
      failure = next;
    }
  }
}

