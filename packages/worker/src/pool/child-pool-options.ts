import type { Logger } from '../log/logger';
import type { AppContract } from '../contract/app-contract';
import type { TypedTasks } from '../task/task';
import type { SchedulingStrategy } from './pool';

/** What a `threads` or `processes` pool is made with. */
export interface ChildPoolOptions {
  kind: 'threads' | 'processes';
  /** The worker's app: its plain-data settings go to the children, and it publishes what memory:// children relay. */
  app: AppContract<TypedTasks>;
  /** Path of the module exporting the AppContract; every child imports it. */
  appModule: string;
  /** Children to start with. */
  size: number;
  strategy?: SchedulingStrategy;
  /** Replace a child after it ran this many tasks. */
  maxTasksPerChild?: number | null;
  /** Replace a child after a task that left it above this many KiB (RSS for processes, heap + buffers for threads). */
  maxMemoryPerChild?: number | null;
  log: Logger;
  /** Milliseconds a child may take to load the app module (default 60 s). */
  startTimeout?: number;
  /** Milliseconds a child may take to exit when asked before it is killed (default 5 s). */
  stopTimeout?: number;
}
