// A worker killed before it could unbind leaves its pidbox queue bound: a broadcast that asks for replies must not
// wait out its timeout for it. Live fanout on Redis is PUBLISH, whose count says who listens (issue #36: every
// worker of a fleet restarted after a crash waited 6 s in Mingle for the dead ones).
import { Connection, Exchange, Mailbox, Queue, UnroutableError } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, makeTransport, rawClient, uniquePrefix } from './helpers/redis-test-env';

const up = await brokerReachable('redis');

describe.skipIf(!up)('a pidbox binding left by a dead node', () => {
  const prefix = uniquePrefix('stale-pidbox');
  let redis: Redis;
  let connection: Connection;

  beforeAll(async () => {
    redis = rawClient();
    connection = new Connection(makeTransport(prefix));
    // What a node killed mid-run leaves: its queue bound to the namespace's fanout exchange, no one subscribed.
    const channel = await connection.channel();
    await channel.declareExchange(new Exchange('stale.pidbox', { type: 'fanout', durable: false, autoDelete: false }));
    await channel.declareQueue(new Queue('dead@host.stale.pidbox'));
    await channel.bindQueue('dead@host.stale.pidbox', 'stale.pidbox', '');
  });

  afterAll(async () => {
    await connection.close();
    await cleanup(redis, prefix);
    redis.disconnect();
  });

  it('makes a mandatory publish to that exchange unroutable', async () => {
    const channel = await connection.channel();
    const message = { body: Buffer.from('{}'), contentType: 'application/json', contentEncoding: 'utf-8', headers: {}, properties: {} };
    await expect(channel.publish('stale.pidbox', '', message, { mandatory: true })).rejects.toBeInstanceOf(UnroutableError);
  });

  it('ends a broadcast at once when only the dead are bound, and still hears a live node beside them', async () => {
    const mailbox = new Mailbox(connection, { namespace: 'stale' });
    try {
      // Waiting for the dead would take the whole minute, and the test would time out first.
      expect(await mailbox.broadcast('ping', { reply: true, timeout: 60_000 })).toEqual([]);
      const node = mailbox.node('live@host', { ping: () => ({ ok: 'pong' }) });
      await node.listen();
      try {
        expect(await mailbox.broadcast('ping', { reply: true, timeout: 60_000, limit: 1 })).toEqual([{ 'live@host': { ok: 'pong' } }]);
      } finally {
        await node.close();
      }
    } finally {
      await mailbox.close();
    }
  });
});
