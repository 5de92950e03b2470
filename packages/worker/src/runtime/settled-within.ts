import { setTimeout as sleep } from 'node:timers/promises';

/**
 * True when `work` settles within `ms`, false when the time runs out first (the work goes on unwatched). Shutdown's
 * bounded waits use it; its timer never keeps the process alive once everything else has closed.
 */
export function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    sleep(ms, false, { ref: false }),
  ]);
}
