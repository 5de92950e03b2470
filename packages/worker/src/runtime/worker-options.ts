import type { Delivery } from '@kq/core';
import type { TaskEventKind } from '../events/task-event-fields';
import type { LogLevel, Logger } from '../log/logger';
import type { AutoscaleOptions } from '../pool/autoscaler';
import type { PoolKind, SchedulingStrategy } from '../pool/pool';
import type { WorkerStep } from './bootstep';
import type { Request } from './request';

export interface WorkerOptions {
  /** Queues to consume (default: the app's `taskDefaultQueue`). */
  queues?: readonly string[];
  /** Tasks run at once (default: the app's `workerConcurrency`); with `autoscale`, its `max`. */
  concurrency?: number;
  /** Prefetch = concurrency × multiplier (default 4); 0 = unlimited. */
  prefetchMultiplier?: number;
  /** Node name, `name@host`; `%h` expands to the host name, `%n` to its first label. Default `kq@<hostname>`. */
  hostname?: string;
  /** Where tasks run: `async` (the event loop, default), `threads` (worker_threads) or `processes` (child processes). */
  pool?: PoolKind;
  /** Path of the module exporting the AppContract; `threads` and `processes` children import it (`kq worker -A` sets it). */
  appModule?: string;
  /** How child pools hand jobs to children (`-O`): `fair` (default) only to idle ones, `fcfs` round-robin. */
  schedulingStrategy?: SchedulingStrategy;
  /** Grow and shrink the pool between `min` and `max` with the reserved work (`--autoscale max,min`). */
  autoscale?: AutoscaleOptions;
  /** Replace a pool child after it ran this many tasks. */
  maxTasksPerChild?: number;
  /** Replace a pool child after a task that left it above this many KiB (a process's RSS; a thread's heap + buffers). */
  maxMemoryPerChild?: number;
  loglevel?: LogLevel;
  logger?: Logger;
  /** Serve `/healthz`, `/readyz` and `/metrics` on this port (`kq worker --http-port`; 0 = any free port). Off by default. */
  httpPort?: number;
  /** Address of that endpoint. Default 127.0.0.1. */
  httpHost?: string;
  /** Seconds a warm shutdown waits for running tasks (default: `workerShutdownTimeout`, 30). */
  shutdownTimeout?: number;
  /** Answer remote control (`celery inspect`, `kq control`). Default true when the broker has fanout. */
  enableRemoteControl?: boolean;
  /**
   * Steps started after connecting and before consuming, stopped in reverse. `app.worker()` adds Celery's (events,
   * Mingle, Gossip, heartbeats, remote control); a `new Worker` runs only those given here.
   */
  steps?: readonly WorkerStep[];
}

export type WorkerEvents = {
  /** Consuming and answering remote control. */
  ready: [];
  /** Every task lifecycle step, with Celery's event fields. */
  task: [kind: TaskEventKind, request: Request, fields: Record<string, unknown>];
  /**
   * A task's message was acked, rejected or requeued, and the broker has it (Redis replied; on AMQP the frame was
   * written to the connection). Until then a crash runs the task again: at-least-once delivery.
   */
  settled: [request: Request, action: 'ack' | 'reject' | 'requeue'];
  /** A message that could not become a task (undecodable, malformed, unknown task, redelivered too often). */
  rejected: [delivery: Delivery, reason: Error];
  /** A task message named a task this worker does not have (Celery sends `task-failed` for it). */
  unknownTask: [taskId: string, name: string];
  shutdown: [];
  /**
   * The worker cannot go on and is stopping: the broker refuses a command consuming needs (`PermissionDenied`), or a
   * reconnect failed on TLS (`TlsFailure`: a certificate rotated to one this worker cannot trust). Retrying would fail
   * again, and a worker that stays up consuming nothing looks healthy while it is not.
   */
  fatal: [error: Error];
  error: [error: Error];
};
