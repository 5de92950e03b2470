import type { Delivery, Queue } from '@kq/core';
import type { DecodeTaskOptions } from '../protocol/index';
import type { TaskEventKind } from '../events/task-event-fields';
import type { Logger } from '../log/logger';
import type { Autoscaler } from '../pool/autoscaler';
import type { Pool } from '../pool/pool';
import type { AppContract } from '../contract/app-contract';
import type { TypedTasks } from '../task/task';
import type { HeldTask } from './held-task';
import type { WorkerState } from './worker-state';

type TaskListener = (kind: TaskEventKind, request: HeldTask, fields: Readonly<Record<string, unknown>>) => void;
type UnknownTaskListener = (taskId: string, name: string) => void;

/**
 * The worker as its parts see it — requests, bootsteps (events, Mingle, Gossip, heartbeats, the state file, remote
 * control), the basic control commands, the HTTP endpoint, periodic tasks. `Worker` implements it; they receive this
 * rather than the `Worker`, so the worker, which makes them, is the only file that knows them all.
 */
export interface WorkerHost {
  readonly app: AppContract<TypedTasks>;
  /** Node name, `name@host`. */
  readonly hostname: string;
  readonly state: WorkerState;
  readonly pool: Pool;
  /** Set with `autoscale`. */
  readonly autoscaler: Autoscaler | null;
  readonly log: Logger;
  /** The task queues consumed now. */
  readonly queues: readonly Queue[];
  readonly prefetchCount: number;
  readonly isConsuming: boolean;
  /** True when the broker marks every delivery redelivered or not (known once started). */
  readonly redeliveredFlag: boolean;
  /** How task messages are decoded (a request reads a body its worker left for the run with these). */
  readonly taskDecodeOptions: DecodeTaskOptions;
  /** Rejects a message whose task cannot be read: logged, dead-lettered, its FAILURE stored when it names its id. */
  rejectUnreadable(delivery: Delivery, error: unknown): Promise<void>;
  growPool(n: number): void;
  shrinkPool(n: number): void;
  stop(options?: { cold?: boolean }): Promise<void>;
  softTimeLimit(name: string): number | null;
  timeLimit(name: string): number | null;
  setTimeLimits(name: string, soft: number | null, hard: number | null): void;
  setRateLimit(name: string, rate: string | number | null): void;
  /** ETA tasks held (`inspect scheduled`). */
  scheduled(): Array<{ eta: Date; request: HeldTask }>;
  /** The logger a task's context gets. */
  taskLogger(name: string): Logger;
  emitTask(kind: TaskEventKind, request: HeldTask, fields?: Readonly<Record<string, unknown>>): void;
  emitSettled(request: HeldTask, action: 'ack' | 'reject' | 'requeue'): void;
  // The events its parts listen to, with the tasks as HeldTasks (the Worker's own events name its Requests).
  on(event: 'ready', listener: () => void): unknown;
  on(event: 'task', listener: TaskListener): unknown;
  on(event: 'unknownTask', listener: UnknownTaskListener): unknown;
  once(event: 'ready', listener: () => void): unknown;
  off(event: 'ready', listener: () => void): unknown;
  off(event: 'task', listener: TaskListener): unknown;
  off(event: 'unknownTask', listener: UnknownTaskListener): unknown;
}
