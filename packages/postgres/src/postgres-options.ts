import { KqError, sanitizeUrl, type TlsOption } from '@kq/core';
import { withTlsParameters } from './postgres-tls';

export interface PostgresTransportOptions {
  /** Kombu's `queue_tablename` (default `kombu_queue`); `queue_tablename` is accepted too. */
  queueTable?: string;
  /** Kombu's `message_tablename` (default `kombu_message`); `message_tablename` is accepted too. */
  messageTable?: string;
  /** How long a claim stays ours without a heartbeat; a crashed consumer's deliveries return after it. Default 30 000. */
  leaseMs?: number;
  /** Heartbeat period of held deliveries. Default leaseMs / 3. */
  leaseRenewIntervalMs?: number;
  /** How often an open store returns expired leases to their queues. Default min(leaseMs / 2, 5000). */
  sweepIntervalMs?: number;
  /** Longest a consumer waits in one claim before looking again (NOTIFY normally wakes it sooner). Default 1000. */
  pollIntervalMs?: number;
  /** Most messages one claim takes. Default 64. */
  batchSize?: number;
  /** Connections in the pool for statements (one more is kept for LISTEN, two for claims, three for acks, one for VACUUM). Default 4. */
  poolSize?: number;
  /**
   * After deleting this many messages (acks, no-ack claims), the store runs a plain `VACUUM` of the message table
   * (skipped when another process's is running), so the space of delivered messages is reused instead of the table
   * growing until autovacuum's next visit: every message leaves two dead row versions (its claim and its delete), and
   * autovacuum looks only once a minute by default. 0 leaves it to autovacuum. Needs to own the table (kq made it,
   * or the same user as Kombu). Default 10 000.
   */
  vacuumEveryDeletes?: number;
  /**
   * TLS by kq's names (`{ caFile, certFile, keyFile, certReqs, checkHostname }`) or Kombu's (`ssl_ca_certs`, ...; Celery's
   * `broker_use_ssl`; `ssl` is accepted as this option's name too), as for Redis and RabbitMQ: written into the URL as
   * libpq's `sslrootcert`, `sslcert`, `sslkey` and `sslmode=verify-full` (see `withTlsParameters`). Without it, libpq's
   * parameters in the URL itself apply. See docs/security.md.
   */
  tls?: TlsOption;
  /** Priority steps (Kombu's `priority_steps`). */
  prioritySteps?: readonly number[];
  /** Where kq reports what it could not do quietly (a failed sweep, a lost listener). Default `console`. */
  logger?: { warn(message: string): void };
}

export interface ResolvedPostgresOptions {
  connectionString: string;
  queueTable: string;
  messageTable: string;
  leaseMs: number;
  leaseRenewIntervalMs: number;
  sweepIntervalMs: number;
  pollIntervalMs: number;
  batchSize: number;
  poolSize: number;
  vacuumEveryDeletes: number;
  logger: { warn(message: string): void };
}

/**
 * `postgresql://`, `postgres://`, and SQLAlchemy's forms `sqla+postgresql://` and `postgresql+psycopg2://` (so a
 * Celery `broker_url` copies across unchanged) become a node-postgres connection string.
 */
export function connectionStringOf(url: string): string {
  const match = /^(?:sqla\+)?(postgres(?:ql)?)(?:\+[a-z0-9_]+)?:\/\//i.exec(url);
  if (!match) {
    throw new KqError(
      `${JSON.stringify(sanitizeUrl(url))} is not a PostgreSQL URL; use postgresql://user:password@host:5432/database ` +
        `(sqla+postgresql:// and postgres:// are accepted too).`,
    );
  }
  return `postgresql://${url.slice(match[0].length)}`;
}

export function resolveOptions(url: string, options: PostgresTransportOptions & Record<string, unknown>): ResolvedPostgresOptions {
  const leaseMs = positive(options.leaseMs, 'leaseMs') ?? 30_000;
  return {
    connectionString: withTlsParameters(connectionStringOf(url), tlsOptionOf(options)),
    queueTable: text(options.queueTable ?? options['queue_tablename']) ?? 'kombu_queue',
    messageTable: text(options.messageTable ?? options['message_tablename']) ?? 'kombu_message',
    leaseMs,
    leaseRenewIntervalMs: positive(options.leaseRenewIntervalMs, 'leaseRenewIntervalMs') ?? Math.max(1, Math.floor(leaseMs / 3)),
    sweepIntervalMs: positive(options.sweepIntervalMs, 'sweepIntervalMs') ?? Math.min(Math.floor(leaseMs / 2), 5000),
    pollIntervalMs: positive(options.pollIntervalMs, 'pollIntervalMs') ?? 1000,
    batchSize: positive(options.batchSize, 'batchSize') ?? 64,
    poolSize: positive(options.poolSize, 'poolSize') ?? 4,
    vacuumEveryDeletes: count(options.vacuumEveryDeletes, 'vacuumEveryDeletes') ?? 10_000,
    logger: options.logger ?? { warn: (message) => console.warn(message) },
  };
}

/** The TLS option by kq's name or Celery's (`ssl`, `broker_use_ssl`). */
export function tlsOptionOf(options: Record<string, unknown>): TlsOption | undefined {
  const given = options['tls'] ?? options['ssl'] ?? options['broker_use_ssl'];
  return given === undefined || given === null ? undefined : (given as TlsOption);
}

function positive(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new KqError(`The PostgreSQL transport option ${name} must be a positive number of milliseconds, got ${String(value)}.`);
  }
  return value;
}

function count(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new KqError(`The PostgreSQL transport option ${name} must be a whole number ≥ 0 (0 turns it off), got ${String(value)}.`);
  }
  return value;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
