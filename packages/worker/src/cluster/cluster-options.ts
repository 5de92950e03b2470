import { KqError } from '@kq/core';

/**
 * How a worker takes part in the fleet: Celery's `-E`, `--heartbeat-interval`, `--without-heartbeat`,
 * `--without-mingle`, `--without-gossip` and `--statedb`.
 */
export interface ClusterOptions {
  /** Send task events (`-E`). Default: the app's `workerSendTaskEvents`. Worker events are always sent. */
  taskEvents?: boolean;
  /** Send `worker-online`, `worker-heartbeat` every `heartbeatInterval` and `worker-offline`. Default true. */
  heartbeat?: boolean;
  /** Seconds between heartbeats (default 2, Celery's). */
  heartbeatInterval?: number;
  /**
   * Say hello to the other workers at start-up, adopting their clock and revoked tasks. Default: on for the
   * `amqp` and `redis` transports, as Celery (it costs one second of start-up).
   */
  mingle?: boolean;
  /** Seconds Mingle waits for replies (Celery: 1). */
  mingleTimeout?: number;
  /** Follow the other workers' events (clock, who is alive, elections). Default: on when the broker has fanout. */
  gossip?: boolean;
  /** Seconds between Gossip's checks for workers that stopped sending heartbeats (Celery: 5). */
  gossipInterval?: number;
  /** Path of the state file that keeps revoked tasks and the clock across restarts (`--statedb`). */
  statedb?: string;
  /** Seconds between state-file writes while running (it is also written on stop). Default 30. */
  statedbSyncInterval?: number;
}

/** Celery's worker flags, as `parseArgs` options, for `kq worker`. */
export const WORKER_CLUSTER_FLAGS = {
  'task-events': { type: 'boolean', short: 'E' },
  statedb: { type: 'string', short: 'S' },
  'without-mingle': { type: 'boolean' },
  'without-gossip': { type: 'boolean' },
  'without-heartbeat': { type: 'boolean' },
  'heartbeat-interval': { type: 'string' },
} as const;

/** Values of `WORKER_CLUSTER_FLAGS` as `parseArgs` returns them. */
export interface WorkerClusterFlagValues {
  'task-events'?: boolean;
  statedb?: string;
  'without-mingle'?: boolean;
  'without-gossip'?: boolean;
  'without-heartbeat'?: boolean;
  'heartbeat-interval'?: string;
}

/** Turns parsed worker flags into cluster options; only what was given is set, so app defaults still apply. */
export function clusterOptionsFromFlags(values: WorkerClusterFlagValues): ClusterOptions {
  const options: ClusterOptions = {};
  if (values['task-events']) options.taskEvents = true;
  if (values.statedb) options.statedb = values.statedb;
  if (values['without-mingle']) options.mingle = false;
  if (values['without-gossip']) options.gossip = false;
  if (values['without-heartbeat']) options.heartbeat = false;
  if (values['heartbeat-interval'] !== undefined) {
    const seconds = Number(values['heartbeat-interval']);
    if (!Number.isFinite(seconds) || seconds <= 0) {
      throw new KqError(`--heartbeat-interval must be a positive number of seconds, got ${JSON.stringify(values['heartbeat-interval'])}.`);
    }
    options.heartbeatInterval = seconds;
  }
  return options;
}
