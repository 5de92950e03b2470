import { KqError } from '@kq/core';

/**
 * Parses Celery's rate limit strings: `"10/s"`, `"100/m"`, `"1000/h"`, or a bare number (per second).
 * Returns tasks per second, or null for no limit (empty, 0, null).
 */
export function parseRateLimit(rate: string | number | null | undefined): number | null {
  if (rate === null || rate === undefined || rate === '' || rate === 0) return null;
  if (typeof rate === 'number') {
    if (!(rate > 0) || !Number.isFinite(rate)) throw new KqError(`Invalid rate limit ${rate}: use a positive number or "N/s", "N/m", "N/h".`);
    return rate;
  }
  const match = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*([smh]))?\s*$/.exec(rate);
  if (!match) throw new KqError(`Invalid rate limit ${JSON.stringify(rate)}: use "N/s", "N/m" or "N/h" (e.g. "10/m").`);
  const amount = Number(match[1]);
  if (amount === 0) return null;
  const per = match[2] === 'm' ? 60 : match[2] === 'h' ? 3600 : 1;
  return amount / per;
}

/**
 * A token bucket (Celery's `TokenBucket`): capacity = one second's worth of tokens (at least 1), refilled
 * continuously. `take()` answers how long to wait before a token is available.
 */
export class TokenBucket {
  readonly rate: number;
  readonly capacity: number;
  #tokens: number;
  #last: number;
  readonly #now: () => number;

  constructor(ratePerSecond: number, now: () => number = () => performance.now() / 1000) {
    this.rate = ratePerSecond;
    this.capacity = Math.max(1, ratePerSecond);
    this.#tokens = this.capacity;
    this.#now = now;
    this.#last = now();
  }

  /** Takes a token if one is available (returns 0), else returns the seconds until one will be. */
  take(): number {
    this.#refill();
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return (1 - this.#tokens) / this.rate;
  }

  #refill(): void {
    const now = this.#now();
    this.#tokens = Math.min(this.capacity, this.#tokens + (now - this.#last) * this.rate);
    this.#last = now;
  }
}
