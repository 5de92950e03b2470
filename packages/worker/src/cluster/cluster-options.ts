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
  /** Seconds between Gossip's checks for workers that stopped sending heartbeats (Celery: 5; at most half a heartbeat interval). */
  gossipInterval?: number;
  /**
   * How many kq workers follow every heartbeat and tell the others whom they lost (default 2); the rest follow only
   * online, offline and election events, so what each worker consumes stays the same whatever the fleet's size.
   * `Infinity` makes every worker follow every heartbeat, as Celery's do.
   */
  gossipWatchers?: number;
  /** Path of the state file that keeps revoked tasks and the clock across restarts (`--statedb`). */
  statedb?: string;
  /** Seconds between state-file writes while running (it is also written on stop). Default 30. */
  statedbSyncInterval?: number;
}

/** Celery's worker flags (`-E`, `-S`, `--without-*`, `--heartbeat-interval`) as a CLI parser gives them. */
export interface WorkerClusterFlagValues {
  taskEvents?: boolean;
  statedb?: string;
  withoutMingle?: boolean;
  withoutGossip?: boolean;
  withoutHeartbeat?: boolean;
  /** Seconds. */
  heartbeatInterval?: number;
}

/** Turns parsed worker flags into cluster options; only what was given is set, so app defaults still apply. */
export function clusterOptionsFromFlags(values: WorkerClusterFlagValues): ClusterOptions {
  const options: ClusterOptions = {};
  if (values.taskEvents) options.taskEvents = true;
  if (values.statedb) options.statedb = values.statedb;
  if (values.withoutMingle) options.mingle = false;
  if (values.withoutGossip) options.gossip = false;
  if (values.withoutHeartbeat) options.heartbeat = false;
  if (values.heartbeatInterval !== undefined) {
    if (!Number.isFinite(values.heartbeatInterval) || values.heartbeatInterval <= 0) {
      throw new KqError(`The heartbeat interval must be a positive number of seconds, got ${values.heartbeatInterval}.`);
    }
    options.heartbeatInterval = values.heartbeatInterval;
  }
  return options;
}
