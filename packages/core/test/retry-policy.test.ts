import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { ConnectionLost, KqError } from '../src/errors';
import { retryDelay, retryOver } from '../src/retry-policy';

describe('retryDelay', () => {
  it('grows by the step from the start up to the maximum', () => {
    const policy = { intervalStart: 100, intervalStep: 200, intervalMax: 500 };
    expect([1, 2, 3, 4].map((attempt) => retryDelay(policy, attempt))).toEqual([100, 300, 500, 500]);
  });

  it('never goes below the base or above base × (1 + jitter)', () => {
    fc.assert(
      fc.property(fc.nat(1000), fc.nat(1000), fc.nat(5000), fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 1, max: 50 }), (start, step, max, jitter, attempt) => {
        const base = Math.min(start + step * (attempt - 1), max);
        const delay = retryDelay({ intervalStart: start, intervalStep: step, intervalMax: max, jitter }, attempt);
        expect(delay).toBeGreaterThanOrEqual(Math.round(base) - 1);
        expect(delay).toBeLessThanOrEqual(Math.round(base * (1 + jitter)) + 1);
      }),
    );
  });
});

describe('retryOver', () => {
  const fast = { intervalStart: 0, intervalStep: 1, intervalMax: 1 };

  it('retries recoverable errors until the operation succeeds', async () => {
    const onRetry = vi.fn();
    let calls = 0;
    const result = await retryOver(
      async () => {
        calls++;
        if (calls < 3) throw new ConnectionLost('gone');
        return 'ok';
      },
      { ...fast, maxRetries: 5 },
      { onRetry },
    );
    expect(result).toBe('ok');
    expect(onRetry).toHaveBeenCalledTimes(2);
  });

  it('does not retry errors that are not recoverable', async () => {
    let calls = 0;
    await expect(
      retryOver(async () => {
        calls++;
        throw new KqError('bad input');
      }, { ...fast, maxRetries: 5 }),
    ).rejects.toThrow('bad input');
    expect(calls).toBe(1);
  });

  it('gives up after maxRetries with the last error', async () => {
    let calls = 0;
    await expect(
      retryOver(async () => {
        calls++;
        throw new ConnectionLost(`try ${calls}`);
      }, { ...fast, maxRetries: 2 }),
    ).rejects.toThrow('try 3');
  });
});
