import type { TlsOption, VirtualTransportOptions } from '@kq/core';
import type { RedisOptions } from 'ioredis';

/** Where kq reports what it could not do quietly (malformed envelopes, failed sweeps). Default: `console`. */
export interface RedisTransportLogger {
  warn(message: string): void;
}

/** A node of a Redis Cluster to start from (ioredis learns the others from it). */
export interface ClusterNodeAddress {
  host: string;
  port: number;
}

/**
 * Options of the Redis transport. Names that exist in Kombu keep Kombu's meaning and units (seconds for
 * `visibilityTimeout` and `unackedMutexExpire`); kq's own durations are in milliseconds and say so (`…Ms`).
 * `createTransport` also accepts Kombu's snake_case transport option names (`visibility_timeout`,
 * `global_keyprefix`, ...), so Celery `broker_transport_options` can be passed as they are.
 */
export interface RedisTransportOptions extends VirtualTransportOptions {
  /** Kombu `global_keyprefix`: prepended to every key and PUB/SUB channel. Must match the Python side. Default ''. */
  globalKeyprefix?: string;
  /** Database number; overrides the URL path. Default: the URL's, else 0. */
  db?: number;
  /**
   * Kombu `visibility_timeout` in **seconds** (default 3600): a delivery no kq consumer holds a lease on (one a
   * Python worker took) comes back when it is older than this.
   */
  visibilityTimeout?: number;
  /**
   * How long a delivery held by a kq consumer stays claimed without a heartbeat. A live consumer renews it (and
   * the `unacked_index` score Python's sweep looks at) every `leaseRenewIntervalMs`; a dead one stops, and any kq
   * process's sweep restores the delivery once the lease has run out. Default 30 000.
   */
  leaseMs?: number;
  /** Most rejected task messages kept in `_kq.dead` for `kq dlq`; older ones are dropped. Default 10 000. */
  deadLetterMax?: number;
  /** Heartbeat period of held deliveries. Default min(leaseMs, visibilityTimeout) / 3, so neither runs out on a live one. */
  leaseRenewIntervalMs?: number;
  /**
   * How often a consuming kq process looks for expired leases. By default there is no fixed period: each look sets
   * the next for when the first lease it saw runs out (plus up to a tenth, so processes spread), at most `leaseMs`
   * later, so a crashed consumer's deliveries come back about when its lease runs out and an idle fleet rarely looks.
   */
  sweepIntervalMs?: number;
  /** How often a consuming kq process runs Kombu's visibility-timeout sweep (under `unacked_mutex`). Default 100 000. */
  visibilitySweepIntervalMs?: number;
  /** Most deliveries one visibility sweep restores (Kombu `unacked_restore_limit`). Default 100. */
  unackedRestoreLimit?: number;
  /** Kombu `sep` between a queue name and its priority step. Must match every peer. Default `\x06\x16`. */
  sep?: string;
  /**
   * Kombu `fanout_prefix`: true (default) prefixes fanout channels with `/{db}.` so databases do not hear each
   * other; false for none (Kombu 3 compatibility); a string replaces the prefix.
   */
  fanoutPrefix?: boolean | string;
  /** Kombu `fanout_patterns`: publish fanout messages on `…/{routing key}` channels. Default true. */
  fanoutPatterns?: boolean;
  /** Kombu `unacked_key`. Default `unacked`. */
  unackedKey?: string;
  /** Kombu `unacked_index_key`. Default `unacked_index`. */
  unackedIndexKey?: string;
  /** Kombu `unacked_mutex_key`. Default `unacked_mutex`. */
  unackedMutexKey?: string;
  /**
   * Kombu `unacked_mutex_expire` in **seconds**. Default 300. Accepted as Kombu's option; kq's sweeps only stand aside
   * while another process holds the mutex and never take it (each restore is one atomic script), so kq uses no expiry.
   */
  unackedMutexExpire?: number;
  /**
   * Redis Cluster (kq only: Kombu has no cluster support, so Python workers cannot share these queues). `true` takes
   * the URL's host as the startup node; `{ nodes }` names the startup nodes; a `redis+cluster://h1:p1,h2:p2/` URL
   * turns it on by itself. Keys follow kq's cluster layout (each queue in a hash slot of its own, see the README).
   */
  cluster?: boolean | { nodes: ClusterNodeAddress[] };
  /** Sentinel: the monitored master's name (Kombu `master_name`). Required for `sentinel://` URLs. */
  masterName?: string;
  /** Run the delayed-delivery promoter in this process (any kq process may). Default true. */
  promoteDelayed?: boolean;
  /** Prefix of the Redis client names (CLIENT SETNAME) of kq's connections. Default `kq`. */
  connectionName?: string;
  /**
   * ioredis auto-pipelining (the commands of one tick sent as one pipeline). Default false: ioredis already writes
   * concurrent commands back to back, and the benchmark measured kq faster without it.
   */
  autoPipelining?: boolean;
  /**
   * TLS, by kq's names (`{ caFile, certFile, keyFile, certReqs }`) or Kombu's (`{ ssl_ca_certs, ssl_certfile,
   * ssl_keyfile, ssl_cert_reqs }`, Celery's `broker_use_ssl`; `ssl` is accepted as this option's name too). Given, it
   * turns TLS on for a `redis://` URL as well; it wins over a `rediss://` URL's parameters. See docs/security.md.
   */
  tls?: TlsOption;
  /**
   * Sentinel: TLS to the sentinels themselves, as `tls` (which, with `sentinel://`, reaches the master and its
   * replicas only, as Kombu's `broker_use_ssl` does). Kombu gives it as `sentinel_kwargs` holding `ssl_*` names, which
   * are read here too.
   */
  sentinelTls?: TlsOption;
  /** Passed to every ioredis connection (TLS, sentinels, timeouts, retryStrategy...); kq's own settings win. */
  redisOptions?: RedisOptions;
  logger?: RedisTransportLogger;
}

/** Kombu transport option names accepted by `createTransport` (with Kombu's units), mapped to kq's names. */
const KOMBU_OPTION_NAMES: Readonly<Record<string, keyof RedisTransportOptions>> = {
  global_keyprefix: 'globalKeyprefix',
  visibility_timeout: 'visibilityTimeout',
  priority_steps: 'prioritySteps',
  sep: 'sep',
  fanout_prefix: 'fanoutPrefix',
  fanout_patterns: 'fanoutPatterns',
  unacked_key: 'unackedKey',
  unacked_index_key: 'unackedIndexKey',
  unacked_mutex_key: 'unackedMutexKey',
  unacked_mutex_expire: 'unackedMutexExpire',
  unacked_restore_limit: 'unackedRestoreLimit',
  master_name: 'masterName',
  client_name: 'connectionName',
  ssl: 'tls',
  broker_use_ssl: 'tls',
};

/**
 * Options as given to `createTransport`: kq names pass through; Kombu's snake_case names are translated
 * (`polling_interval`/`brpop_timeout`, in seconds, become `pollIntervalMs`).
 */
export function normaliseOptions(options: Record<string, unknown>): RedisTransportOptions {
  const result: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined) continue;
    const mapped = KOMBU_OPTION_NAMES[name];
    if (mapped) result[mapped] = value;
    else if (name === 'sentinel_kwargs' && typeof value === 'object' && value !== null) {
      const ssl = sentinelSslOf(value as Record<string, unknown>);
      if (ssl) result['sentinelTls'] = ssl;
    }
    else if ((name === 'polling_interval' || name === 'brpop_timeout') && typeof value === 'number') result['pollIntervalMs'] = value * 1000;
    else result[name] = value;
  }
  return result as RedisTransportOptions;
}

/** redis-py's `ssl`/`ssl_*` arguments among Kombu's `sentinel_kwargs`, as a TLS option; undefined when they ask for none. */
export function sentinelSslOf(kwargs: Record<string, unknown>): TlsOption | undefined {
  const ssl: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(kwargs)) if (name.startsWith('ssl_')) ssl[name] = value;
  if (kwargs['ssl'] !== true && Object.keys(ssl).length === 0) return undefined;
  return ssl as TlsOption;
}

export const DEFAULTS = {
  visibilityTimeout: 3600,
  leaseMs: 30_000,
  visibilitySweepIntervalMs: 100_000,
  unackedRestoreLimit: 100,
  unackedMutexExpire: 300,
  connectionName: 'kq',
} as const;
