import { Queue } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';
import { usePostgresFixture } from './postgres-test-env';

const up = await brokerReachable('postgres');

describe.skipIf(!up)('PostgreSQL: a no-ack claim never handed out goes back', () => {
  const { tables, transport, admin } = usePostgresFixture('putback');

  async function published(queue: string, bodies: readonly string[]): Promise<void> {
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue(queue));
    for (const body of bodies) {
      await channel.publish('', queue, { body: Buffer.from(body), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} });
    }
  }

  const bodiesOf = (claims: ReadonlyArray<{ message: { body: Buffer } }>): string[] => claims.map((claim) => claim.message.body.toString());

  it('at the head: the same row as before (id, time, payload), so it is claimed first again and not marked redelivered', async () => {
    const store = transport.postgresStore;
    await published('putback.head', ['a', 'b', 'c', 'd']);
    const before = await admin.query(`SELECT id, payload FROM ${tables.messageTable} ORDER BY id`);
    // A no-ack claim deletes what it takes; these two were never handed to anybody.
    const claims = await store.claim(['putback.head'], { max: 2, blockMs: 0, noAck: true });
    expect(bodiesOf(claims)).toEqual(['a', 'b']);
    for (const claim of [...claims].reverse()) await store.restore(claim, 'head', { redelivered: false });
    const after = await admin.query(`SELECT id, payload FROM ${tables.messageTable} ORDER BY id`);
    expect(after.rows).toEqual(before.rows);
    const again = await store.claim(['putback.head'], { max: 10, blockMs: 0, noAck: true });
    expect(bodiesOf(again)).toEqual(['a', 'b', 'c', 'd']);
    expect(again.map((claim) => claim.message.redelivered === true)).toEqual([false, false, false, false]);
  });

  it('at the tail: behind everything waiting, marked redelivered unless told otherwise; a put-back repeated leaves one', async () => {
    const store = transport.postgresStore;
    await published('putback.tail', ['a', 'b', 'c']);
    const [first] = await store.claim(['putback.tail'], { max: 1, blockMs: 0, noAck: true });
    if (!first) throw new Error('nothing claimed');
    await store.restore(first, 'tail');
    const again = await store.claim(['putback.tail'], { max: 10, blockMs: 0, noAck: true });
    expect(bodiesOf(again)).toEqual(['b', 'c', 'a']);
    expect(again[2]?.message.redelivered).toBe(true);
    // At the head twice: one row.
    await store.restore(again[0] as (typeof again)[number], 'head', { redelivered: false });
    await store.restore(again[0] as (typeof again)[number], 'head', { redelivered: false });
    expect(await store.queueSize('putback.tail')).toBe(1);
  });

  it('not into a queue deleted meanwhile', async () => {
    const store = transport.postgresStore;
    await published('putback.gone', ['a']);
    const claims = await store.claim(['putback.gone'], { max: 1, blockMs: 0, noAck: true });
    await store.deleteQueue('putback.gone');
    for (const claim of claims) await store.restore(claim, 'head', { redelivered: false });
    const { rows } = await admin.query(
      `SELECT count(*)::int AS n FROM ${tables.messageTable} WHERE queue_id IS NULL OR queue_id NOT IN (SELECT id FROM ${tables.queueTable})`,
    );
    expect(rows[0], 'rows of no queue').toEqual({ n: 0 });
  });
});
