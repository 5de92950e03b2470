import { randomUUID } from 'node:crypto';
import type { ResultMeta, ResultTuple } from '@kq/core';
import { createResultBackend as createFromRegistry } from '@kq/core';
import { startRedisClusterOrSkip } from '@kq/test-harness';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { keySlot } from '../../src/cluster-slot';
import { RedisResultBackend } from '../../src/index';
import { clusterPrefix, rawCluster } from '../helpers/cluster-test-env';

// The Redis result backend on a 3-master cluster of this file's own (`pnpm test:clusters`): result keys on every
// shard, the chord join's MULTI in one slot, and a subscriber that moves on when its node cannot be reached.
const cluster = await startRedisClusterOrSkip();
const keyPrefix = clusterPrefix('cluster-results');
const raw = cluster ? rawCluster(cluster) : undefined;
const backends: RedisResultBackend[] = [];

afterEach(async () => {
  await Promise.all(backends.splice(0).map((backend) => backend.close()));
});

afterAll(async () => {
  raw?.disconnect();
  await cluster?.destroy();
});

function success(taskId: string, result: unknown): ResultMeta {
  return { status: 'SUCCESS', result, traceback: null, children: [], date_done: new Date().toISOString(), task_id: taskId };
}

describe.skipIf(!cluster)('Redis result backend on a cluster', () => {
  const backend = (url = cluster!.url): RedisResultBackend => {
    const made = new RedisResultBackend(url, { keyPrefix });
    backends.push(made);
    return made;
  };

  /** A task id whose result key each master serves. */
  async function taskIdOnEachShard(made: RedisResultBackend): Promise<string[]> {
    const byPort = new Map<number, string>();
    while (byPort.size < cluster!.ports.length) {
      const id = randomUUID();
      const port = await cluster!.portOfSlot(keySlot(made.keyFor(id)));
      if (!byPort.has(port)) byPort.set(port, id);
    }
    return [...byPort.values()];
  }

  it('stores, reads, pushes and forgets results whose keys sit on every shard', async () => {
    const results = backend();
    const ids = await taskIdOnEachShard(results);
    const waiting = ids.map((id) => results.waitFor(id, { timeoutMs: 10_000 }));
    await Promise.all(ids.map((id, index) => results.store(success(id, index))));
    expect((await Promise.all(waiting)).map((meta) => meta.result)).toEqual([0, 1, 2]);
    expect((await results.get(ids[2] as string))?.result).toBe(2);
    // In the cluster itself, each on its own master (not on some default server).
    for (const [index, id] of ids.entries()) expect(await raw!.get(results.keyFor(id))).toContain(`"result": ${index}`);
    // A stored SUCCESS is never overwritten (Celery's rule), on whichever shard it lives.
    await results.store({ ...success(ids[1] as string, 'late'), status: 'FAILURE' });
    expect((await results.get(ids[1] as string))?.status).toBe('SUCCESS');
    await results.forget(ids[0] as string);
    expect(await results.get(ids[0] as string)).toBeNull();
  });

  it('is what core makes of a redis+cluster:// result backend URL', async () => {
    const made = await createFromRegistry(cluster!.url, { global_keyprefix: keyPrefix });
    try {
      expect(made).toBeInstanceOf(RedisResultBackend);
      const id = randomUUID();
      await made.store(success(id, 'via registry'));
      expect((await made.get(id))?.result).toBe('via registry');
    } finally {
      await made.close();
    }
  });

  it('joins a chord in one slot, its keys tagged with the group id, exactly one part finishing it', async () => {
    const results = backend();
    const groupId = randomUUID();
    await results.chordJoin.setChordSize(groupId, 5, 60_000);
    const outcomes = await Promise.all(
      [4, 2, 0, 3, 1].map((index) => results.chordJoin.addPart(groupId, { taskId: `t${index}`, state: 'SUCCESS', result: index * 10 }, index, 60_000)),
    );
    const finishers = outcomes.filter((outcome) => outcome !== null);
    expect(finishers).toHaveLength(1);
    expect(finishers[0]?.map((part) => part.result)).toEqual([0, 10, 20, 30, 40]);
    expect(results.chordJoin.keyFor(groupId, '.j')).toBe(`${keyPrefix}celery-taskset-meta-{${groupId}}.j`);
    expect(await raw!.exists(results.chordJoin.keyFor(groupId, '.j'), results.chordJoin.keyFor(groupId, '.s'))).toBe(0);

    const tuple: ResultTuple = [[groupId, null], [[['a', null], null]]];
    await results.groups.saveGroup(groupId, tuple, 60_000);
    expect(await results.groups.restoreGroup(groupId)).toEqual(tuple);
  });

  it('a waiter whose subscriber node cannot be reached is subscribed on another node and gets its result', async () => {
    // The first startup node has nothing listening (port 1): the subscriber gives it up and moves to the next.
    const dead = '127.0.0.1:1';
    const url = cluster!.url.replace('redis+cluster://', `redis+cluster://${dead},`);
    const results = backend(url);
    const id = randomUUID();
    const waiting = results.waitFor(id, { timeoutMs: 15_000 });
    // Stored once the waiter is subscribed elsewhere, so only the PUBLISH (or the read after resubscribing) can wake it.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await results.store(success(id, 'moved'));
    expect((await waiting).result).toBe('moved');
    expect(await raw!.get(results.keyFor(id))).toContain('"moved"');
  });

  it('a result stored while the subscriber was cut off is read once it is back', async () => {
    const results = backend();
    const id = randomUUID();
    const waiting = results.waitFor(id, { timeoutMs: 15_000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    let killed = 0;
    for (const port of cluster!.ports) killed += Number(await cluster!.cli(port, 'CLIENT', 'KILL', 'TYPE', 'pubsub'));
    expect(killed).toBe(1);
    await results.store(success(id, 'while away'));
    expect((await waiting).result).toBe('while away');
  });
});
