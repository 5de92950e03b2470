import { Queue } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';
import { usePostgresFixture } from './postgres-test-env';

const up = await brokerReachable('postgres');

describe.skipIf(!up)('PostgreSQL: a batch of inserts', () => {
  const { transport, admin, tables } = usePostgresFixture('insert');

  it('stores every envelope of a batch whole and in order, whatever characters its headers and body hold', async () => {
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue('insert.q'));
    // The payloads of a batch travel as one text split on the record separator: a header holding it (and other
    // control characters, quotes, backslashes, non-ASCII) must come back as it was, in its own row.
    const odd = ['\x1e', 'a\x1eb', '\n\t"\\', 'é€😀', '\x00\x1f\x7f', ''];
    const sends = Array.from({ length: 40 }, (_, index) =>
      channel.publish('', 'insert.q', {
        body: Buffer.from(`${index}\x1e${odd[index % odd.length]}`),
        contentType: 'text/plain',
        contentEncoding: 'utf-8',
        headers: { odd: odd[index % odd.length], index },
        properties: {},
      }),
    );
    await Promise.all(sends);
    const { rows } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${tables.messageTable}`);
    expect(Number(rows[0]?.n)).toBe(40);
    const claims = await transport.postgresStore.claim(['insert.q'], { max: 100, blockMs: 0, noAck: true });
    expect(claims.map((claim) => claim.message.headers['index'])).toEqual(Array.from({ length: 40 }, (_, index) => index));
    for (const claim of claims) {
      const index = claim.message.headers['index'] as number;
      expect(claim.message.headers['odd']).toBe(odd[index % odd.length]);
      expect(claim.message.body.toString()).toBe(`${index}\x1e${odd[index % odd.length]}`);
    }
  });
});
