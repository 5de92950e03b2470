import { isAbsolute, resolve } from 'node:path';
import { KqError } from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import type { TypedTasks } from '../task/task';
import type { Logger } from '../log/logger';
import { AsyncPool } from './async-pool';
import { ChildPool } from './child-pool';
import type { Pool, PoolKind, SchedulingStrategy } from './pool';

export interface PoolSettings {
  kind: PoolKind;
  size: number;
  app: AppContract<TypedTasks>;
  log: Logger;
  strategy?: SchedulingStrategy;
  /** Needed by `threads` and `processes`: the module every child imports to get the AppContract. */
  appModule?: string;
  maxTasksPerChild?: number | null;
  /** KiB. */
  maxMemoryPerChild?: number | null;
}

/** The pool a worker runs its tasks in (`kq worker --pool`). */
export function createPool(settings: PoolSettings): Pool {
  const { kind } = settings;
  if (kind === 'async') return new AsyncPool(settings.size);
  if (kind !== 'threads' && kind !== 'processes') {
    throw new KqError(`Unknown pool ${JSON.stringify(kind)}: use async, threads or processes.`);
  }
  if (!settings.appModule) {
    throw new KqError(
      `The ${kind} pool needs appModule: the path of the module that exports your AppContract, which every child imports ` +
        `(kq worker -A passes it). Or use pool: 'async'.`,
    );
  }
  const strategy = settings.strategy ?? 'fair';
  if (strategy !== 'fair' && strategy !== 'fcfs') throw new KqError(`Unknown scheduling strategy ${JSON.stringify(strategy)}: use fair or fcfs.`);
  return new ChildPool({
    kind,
    app: settings.app,
    appModule: isAbsolute(settings.appModule) ? settings.appModule : resolve(settings.appModule),
    size: settings.size,
    strategy,
    maxTasksPerChild: positiveOrNull(settings.maxTasksPerChild, 'maxTasksPerChild'),
    maxMemoryPerChild: positiveOrNull(settings.maxMemoryPerChild, 'maxMemoryPerChild'),
    log: settings.log,
  });
}

function positiveOrNull(value: number | null | undefined, name: string): number | null {
  if (value === undefined || value === null || value === 0) return null;
  if (!Number.isFinite(value) || value < 0) throw new KqError(`${name} must be a positive number (or 0/null for no limit), got ${value}.`);
  return value;
}
