import { Queue } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';
import { usePostgresFixture } from './postgres-test-env';

const up = await brokerReachable('postgres');

describe.skipIf(!up)('PostgreSQL LISTEN connection', () => {
  const { tables, transport, admin } = usePostgresFixture('listen');

  const listening = async (): Promise<number> => {
    const { rows } = await admin.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE query = 'LISTEN ' || $1", [`${tables.messageTable}_kq_ready`]);
    return Number(rows[0]?.n ?? 0);
  };

  it('is opened by the first claim that waits: a process that only publishes is not sent a notification per message', async () => {
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue('listen.q'));
    await channel.publish('', 'listen.q', { body: Buffer.from('x'), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} });
    expect(await listening()).toBe(0);
    const store = transport.postgresStore;
    expect(await store.claim(['listen.q'], { max: 1, blockMs: 0, noAck: true })).toHaveLength(1);
    expect(await listening()).toBe(0);
    // Nothing left: this claim waits (briefly), and listens while it does.
    expect(await store.claim(['listen.q'], { max: 1, blockMs: 50, noAck: true })).toHaveLength(0);
    expect(await listening()).toBe(1);
  });
});
