import type { Connection, LamportClock, Producer, ResultBackend } from '@kq/core';
import type { EtaStrategy } from '../config/config';
import type { Control } from '../control/control';
import type { AsyncResult } from '../results/index';
import type { Router } from '../send/router';
import type { Task, TaskFunction, TaskOptions } from './task';
import type { TaskApp } from './task-app';

/**
 * The app as the worker, pools, beat and periodic tasks use it. `App` implements it; they import this interface,
 * never `App`, so nothing the App imports imports it back.
 */
export interface AppContract extends TaskApp {
  readonly clock: LamportClock;
  readonly tasks: Map<string, Task<never[], unknown>>;
  readonly router: Router;
  readonly control: Control;
  readonly connection: Connection;
  readonly producer: Producer;
  readonly knownBackend: ResultBackend | null | undefined;
  task<A extends unknown[], R, const N extends readonly string[] = never>(name: string, fn: TaskFunction<A, R>, options?: TaskOptions<N>): Task<A, R, N>;
  asyncResult<R = unknown>(id: string): Promise<AsyncResult<R>>;
  codecsReady(): Promise<void>;
  etaStrategy(): Promise<EtaStrategy>;
  close(): Promise<void>;
}
