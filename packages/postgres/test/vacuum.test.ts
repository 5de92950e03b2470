import { Queue, type Delivery } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import type { PostgresTransport } from '../src/index';
import { dropTables, makeTransport, rawClient, uniqueTables } from './postgres-test-env';

const up = await brokerReachable('postgres');

/**
 * Every delivered message leaves two dead row versions (its claim, its delete). Without a VACUUM their space is never
 * reused and the table grows with every message ever sent; autovacuum visits once a minute at best (and the test
 * server runs without it), so the store vacuums its own table after `vacuumEveryDeletes` deletes.
 */
describe.skipIf(!up)('PostgreSQL: the message table stays bounded', () => {
  const made: Array<{ transport: PostgresTransport; tables: ReturnType<typeof uniqueTables> }> = [];
  const admin = rawClient();

  afterAll(async () => {
    for (const { transport, tables } of made) {
      await transport.close().catch(() => undefined);
      await dropTables(admin, tables);
    }
    await admin.end();
  });

  /** Sends `rounds` × `perRound` messages through the table, each round published, then claimed and acked. */
  async function churn(vacuumEveryDeletes: number, rounds: number, perRound: number): Promise<{ sizes: number[]; vacuums: number }> {
    const tables = uniqueTables('vacuum');
    const transport = makeTransport(tables, { vacuumEveryDeletes });
    made.push({ transport, tables });
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue('vacuum.q'));
    // A body the size of a small Celery task message, so each row version is a realistic width.
    const body = Buffer.from('x'.repeat(600));
    const sizes: number[] = [];
    for (let round = 0; round < rounds; round++) {
      await Promise.all(
        Array.from({ length: perRound }, () => channel.publish('', 'vacuum.q', { body, contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} })),
      );
      for (;;) {
        const delivery = (await channel.get('vacuum.q')) as Delivery | null;
        if (!delivery) break;
        await delivery.ack();
      }
      // A VACUUM the last acks started finishes before the size is read (close() waits for it; here, a short settle).
      await new Promise((resolve) => setTimeout(resolve, 300));
      const { rows } = await admin.query<{ size: string }>('SELECT pg_relation_size($1) AS size', [tables.messageTable]);
      sizes.push(Number(rows[0]?.size ?? 0));
    }
    await admin.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await admin.query<{ vacuums: string }>('SELECT vacuum_count AS vacuums FROM pg_stat_user_tables WHERE relname = $1', [tables.messageTable]);
    return { sizes, vacuums: Number(rows[0]?.vacuums ?? 0) };
  }

  it('reuses the space of delivered messages: after five rounds the table is no bigger than after the second', async () => {
    const { sizes, vacuums } = await churn(200, 5, 200);
    expect(vacuums).toBeGreaterThanOrEqual(4);
    // The first round's dead versions are reclaimed by the VACUUM its acks started; later rounds reuse that space.
    expect(sizes[4]).toBeLessThanOrEqual((sizes[1] ?? 0) * 1.25);
  }, 120_000);

  it('with vacuumEveryDeletes: 0 it is left to autovacuum, and the table grows with every round', async () => {
    const { sizes, vacuums } = await churn(0, 3, 200);
    expect(vacuums).toBe(0);
    expect(sizes[2]).toBeGreaterThan((sizes[0] ?? 0) * 2.5);
  }, 120_000);
});
