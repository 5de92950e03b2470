import { randomBytes } from 'node:crypto';
import { Queue, type Delivery } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresTransport } from '../src/index';
import { POSTGRES_URL, uniqueTables } from './postgres-test-env';

const up = await brokerReachable('postgres');

/**
 * Every delivered message leaves two dead row versions (its claim, its delete). Without a VACUUM their space is never
 * reused and the table grows with every message ever sent; autovacuum visits once a minute at best (and the test
 * server runs without it), so the store vacuums its own table after `vacuumEveryDeletes` deletes.
 *
 * The block runs in a database of its own: a VACUUM can only reclaim versions no open transaction may still see, and
 * that horizon covers every session of the same database, so other test files' transactions would otherwise decide
 * what these VACUUMs reclaim. Each round waits for its VACUUM to be counted before the next one publishes, and the size
 * read is the table's high-water mark right after a round's publish: a VACUUM that truncated the table to nothing and
 * one that left its emptied pages in place both count as space reused.
 */
describe.skipIf(!up)('PostgreSQL: the message table stays bounded', () => {
  const database = `kqt_vacuum_${randomBytes(4).toString('hex')}`;
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${database}`;
  const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
  let inDatabase: pg.Pool | undefined;
  const transports: PostgresTransport[] = [];

  beforeAll(async () => {
    await admin.query(`CREATE DATABASE ${database}`);
    inDatabase = new pg.Pool({ connectionString: url.toString(), max: 1 });
  });

  afterAll(async () => {
    for (const transport of transports) await transport.close().catch(() => undefined);
    await inDatabase?.end();
    // Not WITH (FORCE): that would terminate a connection still closing, whose client then reports the termination
    // with no listener left. A closed pool's sessions are gone within moments.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${database}`);
        break;
      } catch (error) {
        if ((error as { code?: string }).code !== '55006' || attempt >= 100) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    await admin.end();
  });

  async function vacuumCount(table: string): Promise<number> {
    const client = inDatabase!;
    // Statistics are read from a per-transaction snapshot; clear it so each poll sees the current count.
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ vacuums: string }>('SELECT vacuum_count AS vacuums FROM pg_stat_user_tables WHERE relname = $1', [table]);
    return Number(rows[0]?.vacuums ?? 0);
  }

  /**
   * Sends `rounds` × `perRound` messages through the table, each round published, then claimed and acked, and returns
   * the table's size after each round's publish and the VACUUMs counted after each round.
   */
  async function churn(vacuumEveryDeletes: number, rounds: number, perRound: number): Promise<{ sizes: number[]; vacuums: number[] }> {
    const tables = uniqueTables('vacuum');
    const transport = new PostgresTransport(url.toString(), { ...tables, logger: { warn: () => undefined }, vacuumEveryDeletes });
    transports.push(transport);
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue('vacuum.q'));
    // A body the size of a small Celery task message, so each row version is a realistic width.
    const body = Buffer.from('x'.repeat(600));
    const sizes: number[] = [];
    const vacuums: number[] = [];
    for (let round = 0; round < rounds; round++) {
      await Promise.all(
        Array.from({ length: perRound }, () => channel.publish('', 'vacuum.q', { body, contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} })),
      );
      const { rows } = await inDatabase!.query<{ size: string }>('SELECT pg_relation_size($1) AS size', [tables.messageTable]);
      sizes.push(Number(rows[0]?.size ?? 0));
      for (;;) {
        const delivery = (await channel.get('vacuum.q')) as Delivery | null;
        if (!delivery) break;
        await delivery.ack();
      }
      // The round's last acks start a VACUUM; the next round publishes only once it has finished (or, with none
      // expected, at once).
      const expected = vacuumEveryDeletes > 0 ? round + 1 : 0;
      const deadline = Date.now() + 30_000;
      let counted = await vacuumCount(tables.messageTable);
      while (counted < expected && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        counted = await vacuumCount(tables.messageTable);
      }
      vacuums.push(counted);
    }
    return { sizes, vacuums };
  }

  it('reuses the space of delivered messages: after five rounds the table is no bigger than after the second', async () => {
    const { sizes, vacuums } = await churn(200, 5, 200);
    expect(vacuums).toEqual([1, 2, 3, 4, 5]);
    // The first round's dead versions are reclaimed by the VACUUM its acks started; later rounds reuse that space.
    expect(sizes[4]).toBeLessThanOrEqual((sizes[1] ?? 0) * 1.25);
  }, 120_000);

  it('with vacuumEveryDeletes: 0 it is left to autovacuum, and the table grows with every round', async () => {
    const { sizes, vacuums } = await churn(0, 3, 200);
    expect(vacuums).toEqual([0, 0, 0]);
    expect(sizes[2]).toBeGreaterThan((sizes[0] ?? 0) * 2.5);
  }, 120_000);
});
