import { setTimeout as sleep } from 'node:timers/promises';

/** A condition the suite waited for did not come true in time. The message says what was awaited and what was seen. */
export class ConditionTimeout extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConditionTimeout';
  }
}

export type Description = string | (() => string);

/**
 * Polls `predicate` until it holds, with a short, growing interval (5 ms up to 50 ms), and fails after `timeoutMs`
 * with `what` — evaluated at failure time, so it can report the state that was last seen.
 */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: Description,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let interval = 5;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() >= deadline) {
      throw new ConditionTimeout(`Timed out after ${timeoutMs} ms waiting for ${describe(what)}`);
    }
    await sleep(Math.min(interval, Math.max(1, deadline - Date.now())));
    interval = Math.min(interval * 2, 50);
  }
}

/**
 * Waits out a window in which something must NOT happen (no further delivery, no extra message). This is not a
 * timing assertion: the window only bounds how long the suite looks for a violation.
 */
export function quietPeriod(ms: number): Promise<void> {
  return sleep(ms);
}

/** Node's timer promise, re-exported for the suites that import it from here. */
export { sleep };

function describe(what: Description): string {
  return typeof what === 'string' ? what : what();
}
