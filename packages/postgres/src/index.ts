// @kq/postgres — PostgreSQL transport (Kombu's SQLAlchemy tables, SKIP LOCKED claims with leases, LISTEN/NOTIFY)
// and a PostgreSQL result backend.
import { claimPackageCopy, type ResultBackendOptions, type TransportOptions } from '@kq/core';
import { PostgresResultBackend } from './postgres-result-backend';
import { tlsOptionOf } from './postgres-options';
import { PostgresTransport } from './postgres-transport';

// One copy of @kq/postgres per process, or a loud error (see claimPackageCopy).
claimPackageCopy('@kq/postgres', import.meta.url);

export { PostgresTransport } from './postgres-transport';
export { PostgresStore } from './postgres-store';
export { QUARANTINE_HOLDER, type PostgresClaim, type RemovedRow } from './postgres-claimer';
export { PostgresResultBackend, type PostgresResultBackendOptions } from './postgres-result-backend';
export { connectionStringOf, type PostgresTransportOptions } from './postgres-options';
export { withTlsParameters } from './postgres-tls';
export { PostgresBeatLease, type PostgresBeatTables } from './beat-lease';
export { tableNames, schemaVersion, type TableNames } from './schema';

/** The factory core's transport registry calls for `postgresql://`, `postgres://` and `sqla+postgresql://` URLs. */
export function createTransport(url: string, options: TransportOptions = {}): PostgresTransport {
  return new PostgresTransport(url, options);
}

/** The factory core's result-backend registry calls for the same schemes. */
export function createResultBackend(url: string, options: ResultBackendOptions = {}): PostgresResultBackend {
  const table = options['resultTable'] ?? options['result_table'];
  const tls = tlsOptionOf(options);
  return new PostgresResultBackend(url, { ...(typeof table === 'string' ? { table } : {}), ...(tls === undefined ? {} : { tls }) });
}
