/**
 * The claim path's batches: answered as ioredis's pipeline and transaction answer, and short-lived. ioredis's
 * `Pipeline` gives each instance its own `length` accessor, which an old-generation descriptor keeps until a full
 * collection, so a pipeline (its commands and replies) outlived every young-generation collection: half of a drain's
 * allocations were copied and promoted. A batch must die young.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { brokerReachable } from '@kq/test-harness';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandBatch } from '../src/command-batch';
import { rawClient, uniquePrefix } from './helpers/redis-test-env';

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

  it('rejects a transaction that a command made Redis discard', async () => {
    await expect(new CommandBatch(redis, { transaction: true }).call('set', `${prefix}.x`, 'v').call('nosuchcommand').exec()).rejects.toThrow(/EXECABORT/);
    expect(await redis.exists(`${prefix}.x`)).toBe(0);
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
