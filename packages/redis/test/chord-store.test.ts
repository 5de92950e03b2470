/**
 * Celery's Redis chord join (`<gid>.j` / `.t` / `.s`) and saved groups, key for key as Celery writes them. The
 * ChordJoin contract itself (one finisher, group order) is checked by defineChordJoinSuite in capabilities.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisChordStore } from '../src/redis-chord-store';

const up = await brokerReachable('redis');

describe.skipIf(!up)('RedisChordStore', () => {
  const url = new URL(brokerUrls.redis);
  const client = new Redis({ host: url.hostname, port: Number(url.port || 6379), db: 13 });
  const prefix = `kqtest-chord-${randomUUID().slice(0, 8)}-celery-taskset-meta-`;
  const store = new RedisChordStore(client, prefix);

  afterAll(async () => {
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
    await client.quit();
  });

  it('writes parts as Celery does, clears its keys when the chord completes, and keeps them when it fails', async () => {
    const groupId = randomUUID();
    await store.setChordSize(groupId, 2, 60_000);
    await store.addPart(groupId, { taskId: 'a', state: 'FAILURE', result: { exc_type: 'ValueError', exc_message: ['x'], exc_module: 'builtins' } }, 0, 60_000);
    expect(await client.zrange(`${prefix}${groupId}.j`, 0, -1, 'WITHSCORES')).toEqual([
      '[1, "a", "FAILURE", {"exc_type": "ValueError", "exc_message": ["x"], "exc_module": "builtins"}]',
      '0',
    ]);
    expect(await client.ttl(`${prefix}${groupId}.j`)).toBeGreaterThan(0);
    const parts = await store.addPart(groupId, { taskId: 'b', state: 'SUCCESS', result: 2 }, 1, 60_000);
    expect(parts?.map((part) => part.taskId)).toEqual(['a', 'b']);
    // A part failed: the chord fails, and Celery leaves its keys to expire (it deletes them only after sending the
    // body), so what the other parts returned stays readable — Celery's test_chord_on_error reads it.
    expect(await client.zcard(`${prefix}${groupId}.j`)).toBe(2);
    expect(await client.ttl(`${prefix}${groupId}.j`)).toBeGreaterThan(0);

    const succeeded = randomUUID();
    await store.setChordSize(succeeded, 2, 60_000);
    await store.addPart(succeeded, { taskId: 'a', state: 'SUCCESS', result: 1 }, 0, 60_000);
    expect(await store.addPart(succeeded, { taskId: 'b', state: 'SUCCESS', result: 2 }, 1, 60_000)).toHaveLength(2);
    expect(await client.exists(`${prefix}${succeeded}.j`, `${prefix}${succeeded}.t`, `${prefix}${succeeded}.s`)).toBe(0);
  });

  it('saves a group in Celery\'s taskset meta form', async () => {
    const groupId = randomUUID();
    await store.saveGroup(groupId, [[groupId, null], [[['a', null], null], [['b', null], null]]], 60_000);
    expect(JSON.parse((await client.get(`${prefix}${groupId}`)) ?? 'null')).toEqual({ result: [[groupId, null], [[['a', null], null], [['b', null], null]]] });
  });
});
