import type { Connection, LamportClock, Producer, ResultBackend } from '@kq/core';
import type { AppConfig, EtaStrategy } from '../config/config';
import type { Control } from '../control/control';
import type { Logger } from '../log/logger';
import type { AsyncResult, Revoker } from '../results/index';
import type { ApplyOptions, TaskCall, TaskEmbed } from '../send/apply-options';
import type { Router } from '../send/router';

/**
 * The types of the tasks an app registers, filled in by task/ (`TypedTasks`): the Task class sits above this folder
 * (it makes signatures, which take the app), so the contract names it through a type parameter instead.
 */
export interface TaskTypes {
  /** A registered task, as `app.tasks` holds it. */
  readonly registered: unknown;
  /** `app.task(name, fn, options)`: registers a task and returns it. */
  readonly register: (name: string, fn: never, options?: never) => unknown;
}

/**
 * The app as everything below `app/` sees it — the canvas, tasks and their context, the worker, pools, events and
 * beat. `App` implements it; they import this, never `App`, so nothing the App imports imports it back. Layers that
 * need less take a `Pick` of it (`CanvasAppView`).
 */
export interface AppContract<T extends TaskTypes = TaskTypes> {
  readonly name: string;
  readonly conf: AppConfig;
  readonly log: Logger;
  readonly threadOid: string;
  readonly clock: LamportClock;
  readonly tasks: Map<string, T['registered']>;
  readonly task: T['register'];
  readonly router: Router;
  readonly control: Control;
  readonly connection: Connection;
  readonly producer: Producer;
  readonly knownBackend: ResultBackend | null | undefined;
  readonly revoker: Revoker;
  sendTask<R = unknown>(name: string, args?: readonly unknown[], kwargs?: Record<string, unknown>, options?: ApplyOptions): Promise<AsyncResult<R>>;
  sendTasks<R = unknown>(calls: readonly TaskCall[]): Promise<AsyncResult<R>[]>;
  sendTaskMessage(name: string, args: unknown[], options: ApplyOptions, embed?: TaskEmbed): Promise<string>;
  backend(): Promise<ResultBackend | null>;
  /** A call's options with the defaults of the named task (its queue, priority, limits) where it is registered here. */
  withTaskDefaults(name: string, options: ApplyOptions): ApplyOptions;
  /** The queue the router sends a task to, or null when the route names only an exchange. */
  routeQueue(name: string): string | null;
  asyncResult<R = unknown>(id: string): Promise<AsyncResult<R>>;
  codecsReady(): Promise<void>;
  etaStrategy(): Promise<EtaStrategy>;
  close(): Promise<void>;
}

/** What the canvas uses of the app: sending, the result backend and its settings, routing, revoking. */
export type CanvasAppView = Pick<AppContract, 'threadOid' | 'sendTaskMessage' | 'backend' | 'withTaskDefaults' | 'routeQueue' | 'revoker'> & {
  readonly conf: Pick<AppConfig, 'resultExpires' | 'resultChordRetryInterval' | 'resultDateDone'>;
};

/** @deprecated The app has one contract: `AppContract` (a task's `task.app` and `ctx.app`). */
export type TaskApp = AppContract;

/** @deprecated The app has one contract: `CanvasAppView` is the canvas's part of `AppContract`. */
export type CanvasApp = CanvasAppView;
