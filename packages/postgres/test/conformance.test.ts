import { fileURLToPath } from 'node:url';
import { brokerReachable, defineTransportSuite } from '@kq/test-harness';
import { afterAll, describe, it } from 'vitest';
import { PostgresTransport } from '../src/index';
import { POSTGRES_URL, dropTables, makeTransport, rawClient, uniqueTables } from './postgres-test-env';

// Every transport of the run shares one set of tables (a second transport stands for a second process); the suite
// isolates tests by entity name and deletes what it declares; the tables go when the file is done.
const up = await brokerReachable('postgres');
const tables = uniqueTables('conformance');
const LEASE_MS = 1500;
const client = up ? rawClient() : undefined;

afterAll(async () => {
  if (!client) return;
  await dropTables(client, tables);
  await client.end();
});

if (up) {
  const db = client!;
  const count = async (queue: string, where: string): Promise<number> => {
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${tables.messageTable} m JOIN ${tables.queueTable} q ON q.id = m.queue_id WHERE q.name = $1 AND ${where}`,
      [queue],
    );
    return Number(rows[0]?.n ?? 0);
  };
  defineTransportSuite({
    name: 'postgres',
    create: () => makeTransport(tables, { pollIntervalMs: 250, leaseMs: LEASE_MS, sweepIntervalMs: 200 }),
    createWithPollInterval: (pollIntervalMs) => makeTransport(tables, { pollIntervalMs, leaseMs: LEASE_MS, sweepIntervalMs: 200 }),
    probe: {
      queueDepth: (queue) => count(queue, 'm.visible'),
      unackedCount: (queue) => count(queue, 'm.kq_claim IS NOT NULL'),
    },
    crash: (transport) => {
      if (!(transport instanceof PostgresTransport)) throw new TypeError('expected a PostgresTransport');
      transport.terminate();
    },
    recoveryTimeoutMs: LEASE_MS * 4,
    leaseMs: LEASE_MS,
    peerModule: fileURLToPath(new URL('./conformance-peer.ts', import.meta.url)),
    peerEnv: { KQ_PEER_URL: POSTGRES_URL, KQ_PEER_QUEUE_TABLE: tables.queueTable, KQ_PEER_MESSAGE_TABLE: tables.messageTable, KQ_PEER_LEASE_MS: String(LEASE_MS) },
    // A process frozen past its lease: it claims and settles, but its heartbeat never comes.
    createStalled: () => makeTransport(tables, { pollIntervalMs: 250, leaseMs: LEASE_MS, leaseRenewIntervalMs: 1_000_000, sweepIntervalMs: 200 }),
  });
} else {
  // A file with no test at all fails the run; this one says why it has none (brokerReachable printed the reason).
  describe.skip('transport conformance: postgres — skipped: the broker is not reachable', () => {
    it('runs when the broker is up', () => undefined);
  });
}
