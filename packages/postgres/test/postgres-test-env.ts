import { randomBytes } from 'node:crypto';
import { brokerUrls } from '@kq/test-harness';
import pg from 'pg';
import { afterAll } from 'vitest';
import { PostgresTransport, type PostgresTransportOptions } from '../src/index';

export const POSTGRES_URL = brokerUrls.postgres;

/** Table names unique to one test file and run, so parallel files and reruns never share a queue. */
export function uniqueTables(label: string): { queueTable: string; messageTable: string } {
  const id = `${label}_${randomBytes(4).toString('hex')}`;
  return { queueTable: `kqt_${id}_queue`, messageTable: `kqt_${id}_message` };
}

export function makeTransport(tables: { queueTable: string; messageTable: string }, options: PostgresTransportOptions = {}): PostgresTransport {
  return new PostgresTransport(POSTGRES_URL, { ...tables, logger: { warn: () => undefined }, ...options });
}

export function rawClient(): pg.Pool {
  return new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
}

/** Drops every table, function and trigger the store made for these names. */
export async function dropTables(client: pg.Pool, tables: { queueTable: string; messageTable: string }): Promise<void> {
  const m = tables.messageTable;
  await client.query(
    `DROP TABLE IF EXISTS ${m}, ${tables.queueTable}, ${m}_kq_exchange, ${m}_kq_binding, ${m}_kq_schema CASCADE;
     DROP FUNCTION IF EXISTS ${m}_kq_notify(), ${m}_kq_notify_inserted() CASCADE`,
  );
}

/**
 * A describe block's tables, one transport on them and an admin pool, all closed and dropped after the block: what
 * a test of one store's behaviour needs. Call it inside the `describe`.
 */
export function usePostgresFixture(label: string): { tables: ReturnType<typeof uniqueTables>; transport: PostgresTransport; admin: pg.Pool } {
  const tables = uniqueTables(label);
  const transport = makeTransport(tables);
  const admin = rawClient();
  afterAll(async () => {
    await transport.close().catch(() => undefined);
    await dropTables(admin, tables);
    await admin.end();
  });
  return { tables, transport, admin };
}

/**
 * A PostgreSQL schema of the test's own, with Kombu's default table names in it. Kombu names one of its indexes
 * `ix_kombu_message_timestamp_id` whatever the table is called, so two Kombu table sets cannot share a schema: tests
 * that let Python create tables each get a schema, reached through the URL's `search_path`.
 */
export async function withSchema(label: string): Promise<{ url: string; drop(): Promise<void> }> {
  const schema = `kqt_${label}_${randomBytes(4).toString('hex')}`;
  const client = rawClient();
  await client.query(`CREATE SCHEMA ${schema}`);
  const separator = POSTGRES_URL.includes('?') ? '&' : '?';
  return {
    url: `${POSTGRES_URL}${separator}options=-c%20search_path%3D${schema}`,
    async drop() {
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}
