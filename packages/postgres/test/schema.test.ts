import { Queue } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { prepared } from '../src/prepared-statement';
import { POSTGRES_URL, usePostgresFixture } from './postgres-test-env';

const up = await brokerReachable('postgres');

describe.skipIf(!up)('PostgreSQL schema: what a message costs the table', () => {
  const { tables, transport, admin } = usePostgresFixture('schema');

  it('a claim adds entries to three indexes, not six: the key, Kombu’s timestamp order and the lease', async () => {
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue('schema.q'));
    const { rows } = await admin.query<{ name: string; partial: string | null }>(
      `SELECT c.relname AS name, pg_get_expr(i.indpred, i.indrelid) AS partial FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE i.indrelid = $1::regclass ORDER BY c.relname`,
      [tables.messageTable],
    );
    const m = tables.messageTable;
    expect(rows.map((row) => row.name).sort()).toEqual([`${m}_kq_due`, `${m}_kq_lease`, `${m}_kq_ready`, `${m}_pkey`, `ix_${m}_timestamp_id`].sort());
    // A claimed row is invisible, leased and not delayed: of the partial indexes it meets only the lease's predicate.
    expect(Object.fromEntries(rows.map((row) => [row.name, row.partial]))).toMatchObject({
      [`${m}_kq_ready`]: 'visible',
      [`${m}_kq_lease`]: '(kq_lease_until IS NOT NULL)',
      [`${m}_kq_due`]: '(kq_due_at IS NOT NULL)',
    });
  });

  it('an insert of many rows NOTIFYs once per queue from one statement trigger; a row made visible again still NOTIFYs', async () => {
    const m = tables.messageTable;
    const { rows: triggers } = await admin.query<{ name: string; level: string }>(
      `SELECT tgname AS name, CASE WHEN tgtype & 1 = 1 THEN 'row' ELSE 'statement' END AS level FROM pg_trigger
       WHERE tgrelid = $1::regclass AND NOT tgisinternal ORDER BY tgname`,
      [m],
    );
    expect(triggers).toEqual([
      { name: `${m}_kq_inserted`, level: 'statement' },
      { name: `${m}_kq_ready`, level: 'row' },
    ]);
    const listener = new pg.Client({ connectionString: POSTGRES_URL });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on('notification', (message) => heard.push(message.payload ?? ''));
      await listener.query(`LISTEN ${m}_kq_ready`);
      const ids = await admin.query<{ id: number }>(
        `INSERT INTO ${tables.queueTable} (id, name) VALUES (nextval('queue_id_sequence'), 'schema.a'), (nextval('queue_id_sequence'), 'schema.b') RETURNING id`,
      );
      const [a, b] = ids.rows.map((row) => String(row.id));
      // As Kombu's _put writes them, two queues in one statement.
      await admin.query(
        `INSERT INTO ${m} (id, visible, "timestamp", payload, version, queue_id)
         SELECT nextval('message_id_sequence'), true, NULL, '{}', 1, q FROM unnest($1::int[]) AS q`,
        [[a, a, b, a, b].map(Number)],
      );
      await admin.query(`UPDATE ${m} SET visible = false WHERE queue_id = $1`, [Number(b)]);
      await waitUntil(() => heard.length >= 2);
      expect([...heard].sort()).toEqual([a, b].sort());
      await admin.query(`UPDATE ${m} SET visible = true WHERE queue_id = $1`, [Number(b)]);
      await waitUntil(() => heard.length >= 3);
      expect(heard[2]).toBe(b);
    } finally {
      await listener.end();
    }
  });
});

describe('prepared statements', () => {
  it('name each distinct text once, so a connection plans it once', () => {
    const first = prepared('SELECT 1 AS kq_schema_test', []);
    expect(prepared('SELECT 1 AS kq_schema_test', [1]).name).toBe(first.name);
    expect(prepared('SELECT 2 AS kq_schema_test', []).name).not.toBe(first.name);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let tries = 0; tries < 200 && !condition(); tries++) await new Promise((resolve) => setTimeout(resolve, 10));
}
