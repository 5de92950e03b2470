import { Queue } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';
import { usePostgresFixture } from './postgres-test-env';

const up = await brokerReachable('postgres');

describe.skipIf(!up)('PostgreSQL: a claim that came back short', () => {
  const { tables, transport, admin } = usePostgresFixture('short');

  const publish = async (channel: Awaited<ReturnType<typeof transport.createChannel>>, body: string): Promise<void> => {
    await channel.publish('', 'short.q', { body: Buffer.from(body), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} });
  };

  it('waits for a notification before its next look instead of sending a claim that finds nothing', async () => {
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue('short.q'));
    const store = transport.postgresStore;
    await publish(channel, 'one');
    // Asks for 5, gets 1: the queue held no more ready rows.
    expect(await store.claim(['short.q'], { max: 5, blockMs: 1000, noAck: true })).toHaveLength(1);
    // A row made ready with the triggers off, so no notification says so: the next claim does not look before a
    // notification (here it is aborted first), where a claim that looked would have taken it.
    const m = tables.messageTable;
    await admin.query(`ALTER TABLE ${m} DISABLE TRIGGER USER`);
    await publish(channel, 'silent');
    await admin.query(`ALTER TABLE ${m} ENABLE TRIGGER USER`);
    const signal = AbortSignal.timeout(200);
    expect(await store.claim(['short.q'], { max: 5, blockMs: 10_000, noAck: true, signal })).toHaveLength(0);
    // The claim after a wait looks again and takes the silent row (short again: nothing more was ready).
    expect((await store.claim(['short.q'], { max: 5, blockMs: 10_000, noAck: true })).map((claim) => claim.message.body.toString())).toEqual(['silent']);
    // A notification for the queue wakes the next one.
    const next = store.claim(['short.q'], { max: 5, blockMs: 10_000, noAck: true });
    await publish(channel, 'loud');
    expect((await next).map((claim) => claim.message.body.toString())).toEqual(['loud']);
  });
});
