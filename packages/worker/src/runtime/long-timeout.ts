/** setTimeout's longest delay, 2^31-1 ms (~24.8 days): a longer one overflows and fires after 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

/** A pending {@link setLongTimeout}. */
export interface LongTimeout {
  clear(): void;
}

/**
 * setTimeout for any delay: past the timer's limit it re-arms until the time has come, and a delay that is not finite
 * (a time limit of 1e308 seconds) never fires. A task message's `timelimit` of 1e300 is an odd way to say "no
 * limit", not a reason to kill the task at once.
 */
export function setLongTimeout(fire: () => void, delayMs: number): LongTimeout {
  let timer: NodeJS.Timeout | undefined;
  if (Number.isFinite(delayMs)) {
    const due = Date.now() + delayMs;
    const arm = (): void => {
      const wait = due - Date.now();
      timer = wait > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fire, Math.max(0, wait));
    };
    arm();
  }
  return {
    clear() {
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}
