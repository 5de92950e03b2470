import { VirtualTransport, type BeatLeaseOptions, type TransportDescription } from '@kq/core';
import { PostgresBeatLease } from './beat-lease';
import { resolveOptions, type PostgresTransportOptions } from './postgres-options';
import { PostgresStore } from './postgres-store';

/**
 * PostgreSQL transport (`postgresql://`, `postgres://`, `sqla+postgresql://`): a {@link PostgresStore} behind the
 * core's `VirtualChannel`, which gives it exchanges of every type, QoS, ack emulation, priorities and
 * dead-lettering. Python Celery on Kombu's SQLAlchemy transport shares its queues.
 */
export class PostgresTransport extends VirtualTransport {
  readonly name = 'postgres';
  readonly postgresStore: PostgresStore;
  readonly leaseMs: number;
  readonly #description: TransportDescription;

  constructor(url: string, options: PostgresTransportOptions & Record<string, unknown> = {}) {
    const resolved = resolveOptions(url, options);
    const store = new PostgresStore(resolved);
    super(store, {
      pollIntervalMs: resolved.pollIntervalMs,
      batchSize: resolved.batchSize,
      ...(options.prioritySteps ? { prioritySteps: options.prioritySteps } : {}),
    });
    this.postgresStore = store;
    this.leaseMs = resolved.leaseMs;
    this.#description = describeUrl(resolved.connectionString);
  }

  describe(): TransportDescription {
    return { ...this.#description };
  }

  /** kq beat's lease in this database: a lease row with an epoch, and the schedule's state (see `PostgresBeatLease`). */
  beatLease(options: BeatLeaseOptions): PostgresBeatLease {
    return new PostgresBeatLease(this, options);
  }

  /** Drops the connections without settling or restoring anything, as a crashed process would (tests). */
  terminate(): void {
    this.postgresStore.terminate();
  }
}

function describeUrl(connectionString: string): TransportDescription {
  const url = new URL(connectionString);
  return {
    transport: 'postgres',
    hostname: url.hostname || 'localhost',
    port: url.port ? Number(url.port) : 5432,
    virtualHost: decodeURIComponent(url.pathname.replace(/^\//, '')) || null,
    userid: url.username ? decodeURIComponent(url.username) : null,
    ssl: url.searchParams.get('sslmode') !== null && url.searchParams.get('sslmode') !== 'disable',
  };
}
