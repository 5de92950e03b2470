import type { MailboxHandler } from '@kq/core';
import type { WorkerHost } from './worker-host';

/**
 * A piece of the worker that starts and stops with it (Celery's bootsteps): events, Mingle, Gossip, heartbeats,
 * the state database. Steps start in order after the broker connection and before consuming, and stop in reverse.
 */
export interface WorkerStep {
  readonly name: string;
  start(worker: WorkerHost): Promise<void>;
  stop(worker: WorkerHost): Promise<void>;
  /** Remote-control commands the step answers (merged over the worker's own). */
  commands?(worker: WorkerHost): Record<string, MailboxHandler>;
}
