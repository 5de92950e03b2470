/**
 * The claim path's batches: answered as ioredis's pipeline and transaction answer, and short-lived. ioredis's
 * `Pipeline` gives each instance its own `length` accessor, which an old-generation descriptor keeps until a full
 * collection, so a pipeline (its commands and replies) outlived every young-generation collection: half of a drain's
 * allocations were copied and promoted. A batch must die young.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { brokerReachable } from '@kq/test-harness';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandBatch, inPieces, WRITE_PIECE_CHARS } from '../src/command-batch';
import { lpushInPieces } from '../src/push-batcher';
import { rawClient, redisUrl, uniquePrefix } from './helpers/redis-test-env';

const up = await brokerReachable('redis');

setFlagsFromString('--expose-gc');
/** V8's full collection, so a measurement starts from what is really alive. */
const collect = runInNewContext('gc') as () => void;

describe.skipIf(!up)('CommandBatch', () => {
  const prefix = uniquePrefix('command-batch');
  let redis: Redis;

  beforeAll(() => {
    redis = rawClient();
  });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('answers each command with [error, reply], in order, an error in its own place', async () => {
    const key = `${prefix}.list`;
    await redis.rpush(key, 'a', 'b');
    const replies = await new CommandBatch(redis).call('lmove', key, `${prefix}.moved`, 'LEFT', 'LEFT').call('hget', key, 'f').call('llen', key).exec();
    expect(replies[0]).toEqual([null, 'a']);
    expect(replies[1]?.[0]).toBeInstanceOf(Error);
    expect(String(replies[1]?.[0])).toMatch(/WRONGTYPE/);
    expect(replies[2]).toEqual([null, 1]);
  });

  it('runs a transaction between MULTI and EXEC and answers with what EXEC returned', async () => {
    const key = `${prefix}.tx`;
    const replies = await new CommandBatch(redis, { transaction: true }).call('hset', key, 'f', 'v').call('hget', key, 'f').call('zadd', key, 1, 'x').exec();
    expect(replies[0]).toEqual([null, 1]);
    expect(replies[1]).toEqual([null, 'v']);
    expect(String(replies[2]?.[0])).toMatch(/WRONGTYPE/);
  });

  it('answers an empty batch at once, with no replies', async () => {
    expect(await new CommandBatch(redis).exec()).toEqual([]);
  });

  it('fails a command ioredis timed out in its own place, once: the reply that comes later changes nothing', async () => {
    const timed = new Redis(redisUrl(0), { commandTimeout: 100 });
    try {
      // A BLPOP that waits 0.6 s for nothing, then a PING answered after it: both time out at 100 ms.
      const replies = await new CommandBatch(timed).call('blpop', `${prefix}.never`, 0.6).call('ping').exec();
      expect(replies.map(([error]) => String(error))).toEqual(['Error: Command timed out', 'Error: Command timed out']);
      await sleep(800); // the late replies (nil, PONG) reach commands already failed
      expect(replies.map(([error]) => String(error))).toEqual(['Error: Command timed out', 'Error: Command timed out']);
      expect(await new CommandBatch(timed).call('ping').exec()).toEqual([[null, 'PONG']]);
    } finally {
      timed.disconnect();
    }
  });

  it('rejects a transaction that a command made Redis discard', async () => {
    await expect(new CommandBatch(redis, { transaction: true }).call('set', `${prefix}.x`, 'v').call('nosuchcommand').exec()).rejects.toThrow(/EXECABORT/);
    expect(await redis.exists(`${prefix}.x`)).toBe(0);
  });

  it('writes a large batch in pieces of whole commands, no piece much longer than WRITE_PIECE_CHARS, in one corked write', async () => {
    const key = `${prefix}.pieces`;
    const records = Array.from({ length: 400 }, (_, index) => [`tag-${index}`, `record ${index} `.repeat(80)]).flat();
    const writes: Array<string | Buffer> = [];
    const stream = redis.stream;
    const write = stream.write.bind(stream);
    let corked = 0;
    const cork = stream.cork.bind(stream);
    stream.cork = () => {
      corked++;
      cork();
    };
    stream.write = ((chunk: string | Buffer, ...rest: never[]) => {
      writes.push(chunk);
      return write(chunk, ...rest);
    }) as typeof stream.write;
    try {
      await new CommandBatch(redis, { transaction: true }).callInPieces('hset', key, records, 2).call('hlen', key).exec();
    } finally {
      stream.write = write as typeof stream.write;
      stream.cork = cork;
    }
    expect(corked).toBe(1);
    expect(writes.length).toBeGreaterThan(10); // ~400 KB of records
    // A piece is whole commands; the longest is one HSET of about WRITE_PIECE_CHARS with its framing.
    expect(Math.max(...writes.map((piece) => piece.length))).toBeLessThan(WRITE_PIECE_CHARS + 2_000);
    expect(await redis.hlen(key)).toBe(400);
    expect(await redis.hget(key, 'tag-399')).toBe(records[799]);
  });

  it('cuts items into runs of whole groups of about the size asked for', () => {
    expect(inPieces(['aa', 'bb', 'cc', 'dd', 'ee'], 1, 4)).toEqual([['aa', 'bb'], ['cc', 'dd'], ['ee']]);
    expect(inPieces(['f1', 'value1', 'f2', 'value2', 'f3', 'v3'], 2, 12)).toEqual([['f1', 'value1'], ['f2', 'value2', 'f3', 'v3']]);
    // A group longer than the size asked for is a run of its own, never cut.
    expect(inPieces(['x'.repeat(20), 'y'], 1, 10)).toEqual([['x'.repeat(20)], ['y']]);
    expect(inPieces([], 2, 10)).toEqual([]);
  });

  it('pushes a bulk publish in LPUSHes of about WRITE_PIECE_CHARS, leaving the list as one LPUSH would', async () => {
    const [one, pieces] = [`${prefix}.lpush-one`, `${prefix}.lpush-pieces`];
    const values = Array.from({ length: 1000 }, (_, index) => `{"envelope": ${index}, "body": "${'x'.repeat(900)}"}`);
    await redis.lpush(one, ...values);
    const before = (await redis.info('commandstats')).match(/cmdstat_lpush:calls=(\d+)/)?.[1];
    await lpushInPieces(redis, pieces, values);
    const after = (await redis.info('commandstats')).match(/cmdstat_lpush:calls=(\d+)/)?.[1];
    expect(Number(after) - Number(before)).toBeGreaterThan(25); // ~1 MB in pieces of 32 KB
    expect(await redis.lrange(pieces, 0, -1)).toEqual(await redis.lrange(one, 0, -1));
    await expect(lpushInPieces(redis, `${prefix}.pieces`, values)).rejects.toThrow(/WRONGTYPE/); // a hash: the first error
  });

  it('is not kept past the young generation: a claim loop of batches promotes little to the old one', async () => {
    const key = `${prefix}.young`;
    await redis.rpush(key, ...Array.from({ length: 64 }, (_, index) => `message ${index} `.repeat(40)));
    const oldSpace = (): number => getHeapSpaceStatistics().find((space) => space.space_name === 'old_space')?.space_used_size ?? 0;
    const loop = async (): Promise<number> => {
      collect();
      const before = oldSpace();
      // ~20 MB of commands and replies, each batch dropped once answered.
      for (let round = 0; round < 300; round++) {
        const batch = new CommandBatch(redis);
        for (let index = 0; index < 64; index++) batch.call('lindex', key, index);
        await batch.exec();
      }
      return oldSpace() - before;
    };
    await loop(); // warm-up: code, shapes and ioredis's buffers land in the old generation once
    // ioredis's pipelines promoted 7–19 MB in the same loop; what is promoted now is the odd batch a scavenge caught
    // mid-answer.
    expect(await loop()).toBeLessThan(4_000_000);
  });
});
