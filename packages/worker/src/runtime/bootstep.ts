import type { MailboxHandler } from '@kq/core';
import type { WorkerHost } from './worker-host';

/**
 * A piece of the worker that starts and stops with it (Celery's bootsteps): events, Mingle, Gossip, heartbeats,
 * the state database. Steps start in order after the broker connection and before consuming, and stop in reverse.
 */
export interface WorkerStep {
  readonly name: string;
  /**
   * Starts the step. Work that nothing after it waits on (broker round trips, mostly) it may leave running and return
   * as `{ finishing }`: the later steps, the control node and the task consumer start meanwhile, and the worker is
   * ready once it has settled. `stop()` may come before it has; the step then waits for it.
   */
  start(worker: WorkerHost): Promise<void | StepFinishing>;
  stop(worker: WorkerHost): Promise<void>;
  /** Remote-control commands the step answers (merged over the worker's own). */
  commands?(worker: WorkerHost): Record<string, MailboxHandler>;
}

/** What a step's `start()` left running (see `WorkerStep.start`); a rejection fails the worker's start as a throw would. */
export interface StepFinishing {
  readonly finishing: Promise<void>;
}
