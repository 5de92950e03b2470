// The PostgreSQL beat lease against core's BeatLease contract (the shared suite), on tables of this file's own.
import { brokerReachable, defineBeatLeaseSuite } from '@kq/test-harness';
import { afterAll } from 'vitest';
import type { PostgresBeatLease, PostgresTransport } from '../src/index';
import { dropTables, makeTransport, rawClient, uniqueTables } from './postgres-test-env';

const up = await brokerReachable('postgres');
const tables = uniqueTables('beat');

afterAll(async () => {
  if (!up) return;
  const client = rawClient();
  await client.query(`DROP TABLE IF EXISTS ${tables.messageTable}_kq_beat, ${tables.messageTable}_kq_beat_tick`);
  await dropTables(client, tables);
  await client.end();
});

defineBeatLeaseSuite({
  name: 'postgres',
  create: () => makeTransport(tables),
  skip: !up && 'PostgreSQL is not reachable',
  // A leader that paused past its lease: the row's expiry passed, and the next campaigner takes it.
  loseLeadership: async (lease, transport) => {
    await (transport as PostgresTransport).postgresStore.pool.query(
      `UPDATE ${(lease as PostgresBeatLease).tables.lease} SET expires_at = clock_timestamp() - interval '1 second'`,
    );
  },
});
