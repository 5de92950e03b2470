import type { Transport } from '@kq/core';
import type { WorkerHost } from '../runtime/worker-host';
import { hideSecrets } from './worker-conf';

/**
 * `inspect stats` for a kq worker, in the order and shape of Celery's (docs/wire.md#remote-control-pidbox):
 * `total, pid, clock` (a **string**), `uptime`, `pool`, `broker`, `prefetch_count`, `rusage`.
 */
export function workerStats(worker: WorkerHost, transport: Transport): Record<string, unknown> {
  return {
    total: Object.fromEntries(worker.state.total),
    pid: process.pid,
    clock: String(worker.app.clock.value),
    uptime: Math.round((Date.now() - worker.state.startedAt) / 1000),
    pool: poolInfo(worker),
    ...autoscalerInfo(worker),
    broker: brokerInfo(worker, transport),
    prefetch_count: worker.prefetchCount,
    rusage: rusage(),
  };
}

/**
 * The `pool` entry. A pool may describe itself with an `info()` method; otherwise the keys Flower and `celery
 * inspect stats` show for Celery's pools, for a pool that runs in this process.
 */
export function poolInfo(worker: WorkerHost): Record<string, unknown> {
  const pool = worker.pool as typeof worker.pool & { info?: () => Record<string, unknown> };
  if (typeof pool.info === 'function') return pool.info();
  return {
    'max-concurrency': pool.limit,
    processes: [process.pid],
    'max-tasks-per-child': 'N/A',
    'put-guarded-by-semaphore': false,
    timeouts: [worker.app.conf.taskSoftTimeLimit ?? 0, worker.app.conf.taskTimeLimit ?? 0],
    implementation: `kq:${pool.name}`,
  };
}

/** `{autoscaler: {max, min, current, qty}}` when the worker autoscales (Celery's Autoscaler step info). */
function autoscalerInfo(worker: WorkerHost): Record<string, unknown> {
  const { autoscaler } = worker as unknown as { autoscaler?: { info?: () => unknown } | null };
  const info = typeof autoscaler?.info === 'function' ? autoscaler.info() : undefined;
  return info === undefined ? {} : { autoscaler: info };
}

/** Kombu's `Connection.info()`, built from the transport's own description (no password). */
export function brokerInfo(worker: WorkerHost, transport: Transport): Record<string, unknown> {
  const description = transport.describe();
  return {
    hostname: description.hostname,
    userid: description.userid,
    virtual_host: description.virtualHost,
    port: description.port,
    insist: false,
    ssl: description.ssl,
    transport: description.transport,
    connect_timeout: 4,
    // Celery shows them as given: a Redis sentinel's or a TLS key's password would travel to every inspector.
    transport_options: hideSecrets(worker.app.conf.brokerTransportOptions),
    login_method: description.loginMethod ?? null,
    uri_prefix: null,
    heartbeat: 120.0,
    failover_strategy: 'round-robin',
    alternates: [],
  };
}

/** Python's `resource.getrusage(RUSAGE_SELF)` fields, from Node's `process.resourceUsage()`. */
export function rusage(): Record<string, number> {
  const usage = process.resourceUsage();
  return {
    utime: usage.userCPUTime / 1e6,
    stime: usage.systemCPUTime / 1e6,
    maxrss: usage.maxRSS,
    ixrss: usage.sharedMemorySize,
    idrss: usage.unsharedDataSize,
    isrss: usage.unsharedStackSize,
    minflt: usage.minorPageFault,
    majflt: usage.majorPageFault,
    nswap: usage.swappedOut,
    inblock: usage.fsRead,
    oublock: usage.fsWrite,
    msgsnd: usage.ipcSent,
    msgrcv: usage.ipcReceived,
    nsignals: usage.signalsCount,
    nvcsw: usage.voluntaryContextSwitches,
    nivcsw: usage.involuntaryContextSwitches,
  };
}
