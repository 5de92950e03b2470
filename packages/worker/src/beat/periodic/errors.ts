import { brandClass, KqError } from '@kq/core';

/**
 * Throw from a periodic task to end its cycle: no further run is scheduled, and workers do not start a new cycle
 * until `periodicTask.start({ restart: true })`. The run itself counts as a success with `result` as its result.
 */
export class StopPeriodic<R = unknown> extends KqError {
  constructor(
    readonly reason = 'the task stopped its cycle',
    readonly result?: R,
  ) {
    super(reason);
  }
}
brandClass(StopPeriodic, '@kq/worker:StopPeriodic');
