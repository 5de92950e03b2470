import { readFileSync } from 'node:fs';
import { Queue, type Channel, type OutgoingMessage } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import type { RedisTransport } from '../src/index';
import { DEFAULT_KEY_NAMES, KeyLayout, KOMBU_SEP } from '../src/key-layout';
import { inflightMember, leaseScore, NativeClaimer, unackedRecord } from '../src/native-claim';
import type { RedisClaim } from '../src/redis-claimer';
import { useRedisFixture } from './helpers/redis-test-env';

const up = await brokerReachable('redis');

function message(text: string): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: { deliveryMode: 2 } };
}

describe('native claim records', () => {
  it('scores a lease as lua/prelude.lua does: <s>.<µs> of deadline - visibility timeout, a lease capped at the timeout', () => {
    expect(leaseScore(30_000_000, 3_600_000_000, 1_780_000_000_123_456)).toBe('1779996430.123456');
    expect(leaseScore(7_200_000_000, 3_600_000_000, 1_780_000_000_000_001)).toBe('1780000000.000001');
    expect(leaseScore(1_500_000, 1_000_000, 2_000_000)).toBe('2.000000');
  });

  it('writes Kombu’s [envelope, exchange, routing_key] with the envelope as stored and the names as Python writes them', () => {
    expect(unackedRecord('{"a": 1}', '', 'celery')).toBe('[{"a": 1}, "", "celery"]');
    expect(unackedRecord('{}', 'ex "q"', 'a\\b')).toBe('[{}, "ex \\"q\\"", "a\\\\b"]');
  });
});

describe('native claims on a server without LMOVE (Redis before 6.2)', () => {
  it('give way to the claim script for good, and take back the registry entries they wrote', async () => {
    const layout = new KeyLayout({ prefix: 'p:', sep: KOMBU_SEP, steps: [0], fanoutPrefix: '', fanoutPatterns: false, names: DEFAULT_KEY_NAMES });
    const removed: string[][] = [];
    const sent: string[] = [];
    const pipeline = new Proxy({} as Record<string, unknown>, {
      get: (_target, name: string) =>
        name === 'exec'
          ? async () => sent.map((command) => (command === 'lmove' ? [new Error("ERR unknown command 'lmove'"), null] : command === 'time' ? [null, ['1', '2']] : command === 'zadd' ? [null, 1] : [null, 0]))
          : (...args: unknown[]) => {
              // A client that is not a plain Redis one (this fake, a cluster) is sent batches through its pipeline.
              sent.push(name === 'call' ? String(args[0]) : name);
              return pipeline;
            },
    });
    const commands = { pipeline: () => pipeline, zrem: async (_key: string, ...members: string[]) => void removed.push(members) };
    const native = new NativeClaimer({
      layout,
      leaseUs: 30_000_000,
      visibilityUs: 3_600_000_000,
      commands: () => commands as never,
      pool: () => undefined,
      clusterQueues: () => undefined,
      isClosed: () => false,
      takeAcks: () => [],
      acksFailed: () => undefined,
      settleAck: () => undefined,
      hold: () => undefined,
      held: () => 0,
      warn: () => undefined,
      reportError: () => undefined,
    });
    await expect(native.claim(['q'], 2)).rejects.toThrow(/unknown command/);
    expect(native.supported).toBe(false);
    expect(removed).toHaveLength(1);
    expect(JSON.parse(removed[0]?.[0] as string)).toEqual([expect.stringMatching(/^p:_kq\.inflight\./), 'p:q']);
  });
});

describe.skipIf(!up)('native claims on Kombu’s layout', () => {
  const fixture = useRedisFixture('native');
  const { prefix } = fixture;
  let redis: Redis;
  let transport: RedisTransport;
  let channel: Channel;

  beforeEach(async () => {
    redis = fixture.redis;
    transport = fixture.transport();
    channel = await transport.createChannel();
  });

  it('scores exactly as the scripts’ lease_score, so renewals and settles of native claims compare equal', async () => {
    const prelude = readFileSync(new URL('../lua/prelude.lua', import.meta.url), 'utf8');
    for (const [lease, visibility, us] of [
      [30_000_000, 3_600_000_000, 1_780_000_000_123_456],
      [1_000_000, 500_000, 1_780_000_000_999_999],
      [30_000_000, 60_000_000, 1_780_000_000_000_007],
    ] as const) {
      const lua = await redis.eval(`${prelude}\nreturn lease_score(tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))`, 0, lease, visibility, us);
      expect(leaseScore(lease, visibility, us)).toBe(lua);
    }
  });

  it('puts back, in order, what a process took into its in-flight list and died before recording; a claim under way is left alone', async () => {
    await channel.declareQueue(new Queue('orphans'));
    for (const n of [1, 2, 3, 4]) await channel.publish('', 'orphans', message(`m${n}`));
    const queue = `${prefix}orphans`;
    const registry = `${prefix}_kq.inflight`;
    // A dead process's claim: two messages moved, registered long ago, never recorded.
    const dead = `${registry}.dead.0`;
    await redis.lmove(queue, dead, 'RIGHT', 'LEFT');
    await redis.lmove(queue, dead, 'RIGHT', 'LEFT');
    await redis.zadd(registry, Date.now() - 10 * 60_000, inflightMember(dead, queue));
    // A live claim, registered just now: its process will record what it moved.
    const live = `${registry}.live.0`;
    await redis.lmove(queue, live, 'RIGHT', 'LEFT');
    await redis.zadd(registry, Date.now(), inflightMember(live, queue));

    expect(await transport.redisStore.sweepLeases()).toBe(2);
    expect(await redis.exists(dead)).toBe(0);
    expect(await redis.zrange(registry, 0, -1)).toEqual([inflightMember(live, queue)]);
    expect(await redis.llen(live)).toBe(1);
    // m1 and m2 are consumed next again, in their order, then m4 (m3 is the live claim's).
    const claims = await transport.redisStore.claim(['orphans'], { max: 10, blockMs: 0, noAck: false });
    expect(claims.map((claim) => claim.message.body.toString())).toEqual(['m1', 'm2', 'm4']);
    expect(claims.every((claim) => !claim.message.redelivered)).toBe(true);
    for (const claim of claims) await transport.redisStore.ack(claim);
    await redis.del(live);
    await redis.zrem(registry, inflightMember(live, queue));
  });

  it('asks a list for about what it holds: a claim of a short queue sends few moves, and the acks waiting ride along', async () => {
    await channel.declareQueue(new Queue('short'));
    await channel.publish('', 'short', message('first'));
    const store = transport.redisStore;
    const [first] = await store.claim(['short'], { max: 400, blockMs: 0, noAck: false });
    expect(first?.message.body.toString()).toBe('first');
    await channel.publish('', 'short', message('second'));
    const before = await commandCalls(redis, 'lmove');
    const acked = store.ack(first as RedisClaim);
    const [second] = await store.claim(['short'], { max: 400, blockMs: 0, noAck: false });
    await acked;
    expect(second?.message.body.toString()).toBe('second');
    // The list held 0 after the first claim: the second asks for a few (slack for new arrivals), not for 400.
    const moves = (await commandCalls(redis, 'lmove')) - before;
    expect(moves).toBeLessThan(100);
    expect(await redis.hexists(`${prefix}unacked`, (first as RedisClaim).tag)).toBe(0);
    await store.ack(second as RedisClaim);
  });

  it('records an envelope with text beyond ASCII exactly as it was stored, on a claim and on a BRPOP wake-up', async () => {
    await channel.declareQueue(new Queue('utf8'));
    const store = transport.redisStore;
    const envelope = (tag: string): string =>
      `{"body": "aGk=", "content-encoding": "utf-8", "content-type": "text/plain", "headers": {"note": "café ✓ 😀"}, ` +
      `"properties": {"delivery_mode": 2, "delivery_info": {"exchange": "", "routing_key": "utf8"}, "priority": 0, ` +
      `"body_encoding": "base64", "delivery_tag": "${tag}"}}`;
    await redis.lpush(`${prefix}utf8`, envelope('claimed'));
    const [claimed] = await store.claim(['utf8'], { max: 10, blockMs: 0, noAck: false });
    expect(claimed?.message.headers['note']).toBe('café ✓ 😀');
    expect(await redis.hget(`${prefix}unacked`, 'claimed')).toBe(`[${envelope('claimed')}, "", "utf8"]`);
    // The queue is empty now (the claim got less than it asked for): the next claim waits in BRPOP, and records what
    // wakes it.
    const waiting = store.claim(['utf8'], { max: 10, blockMs: 5000, noAck: false });
    setTimeout(() => void redis.lpush(`${prefix}utf8`, envelope('popped')), 50);
    const [popped] = await waiting;
    expect(popped?.message.deliveryTag).toBe('popped');
    expect(await redis.hget(`${prefix}unacked`, 'popped')).toBe(`[${envelope('popped')}, "", "utf8"]`);
    for (const claim of [claimed, popped]) await store.ack(claim as RedisClaim);
  });
});

/** Calls of a command since the server started (shared server: other tests add some, never remove). */
async function commandCalls(redis: Redis, command: string): Promise<number> {
  const info = await redis.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}
