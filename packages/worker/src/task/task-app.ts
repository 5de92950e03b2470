import type { ApplyOptions, TaskCall } from '../send/apply-options';
import type { CanvasApp } from '../canvas/index';
import type { AppConfig } from '../config/config';
import type { Logger } from '../log/logger';
import type { AsyncResult } from '../results/index';

/**
 * The app as a task and a running task's context see it (`task.app`, `ctx.app`): sending, its configuration and log.
 * The App implements it; tasks import this, never the App, so the App stays at the base of the package.
 */
export interface TaskApp extends CanvasApp {
  readonly name: string;
  readonly conf: AppConfig;
  readonly log: Logger;
  sendTask<R = unknown>(name: string, args?: readonly unknown[], kwargs?: Record<string, unknown>, options?: ApplyOptions): Promise<AsyncResult<R>>;
  sendTasks<R = unknown>(calls: readonly TaskCall[]): Promise<AsyncResult<R>[]>;
}
