import type { AppContract } from '../contract/app-contract';
import type { TypedTasks } from '../task/task';
import { parseRateLimit, TokenBucket } from './rate-limit';

/**
 * A worker's per-task limits: the rate limit's token bucket and the soft and hard time limits, each the task's own
 * or the app's default until remote control (`rate_limit`, `time_limit`) changes it for this worker.
 */
export class TaskLimits {
  readonly #app: AppContract<TypedTasks>;
  readonly #buckets = new Map<string, TokenBucket | null>();
  readonly #timeLimits = new Map<string, { soft: number | null; hard: number | null }>();

  constructor(app: AppContract<TypedTasks>) {
    this.#app = app;
  }

  softTimeLimit(name: string): number | null {
    return this.#timeLimits.get(name)?.soft ?? this.#app.conf.taskSoftTimeLimit;
  }

  timeLimit(name: string): number | null {
    return this.#timeLimits.get(name)?.hard ?? this.#app.conf.taskTimeLimit;
  }

  setTimeLimits(name: string, soft: number | null, hard: number | null): void {
    this.#timeLimits.set(name, { soft, hard });
  }

  /** null disables it. */
  setRateLimit(name: string, rate: string | number | null): void {
    const perSecond = parseRateLimit(rate);
    this.#buckets.set(name, perSecond === null ? null : new TokenBucket(perSecond));
  }

  /** The task's token bucket, made from its `rateLimit` (or the app's default) on first use; null when unlimited. */
  bucket(name: string): TokenBucket | null {
    if (!this.#buckets.has(name)) {
      const task = this.#app.tasks.get(name);
      this.setRateLimit(name, task?.options.rateLimit ?? this.#app.conf.taskDefaultRateLimit);
    }
    return this.#buckets.get(name) ?? null;
  }
}
