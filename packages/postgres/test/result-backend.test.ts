import { OperationTimeout, type ResultMeta } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresResultBackend } from '../src/index';
import { POSTGRES_URL, rawClient } from './postgres-test-env';

const up = await brokerReachable('postgres');

const meta = (taskId: string, status: ResultMeta['status'], result: unknown): ResultMeta => ({
  status,
  result,
  traceback: null,
  children: [],
  date_done: status === 'SUCCESS' || status === 'FAILURE' ? new Date().toISOString() : null,
  task_id: taskId,
});

describe.skipIf(!up)('PostgreSQL result backend', () => {
  const table = `kqt_results_${randomUUID().slice(0, 8)}`;
  const backends: PostgresResultBackend[] = [];
  const backend = (): PostgresResultBackend => {
    const made = new PostgresResultBackend(POSTGRES_URL, { table, logger: { warn: () => undefined } });
    backends.push(made);
    return made;
  };

  afterAll(async () => {
    await Promise.all(backends.map((made) => made.close()));
    const client = rawClient();
    await client.query(`DROP TABLE IF EXISTS ${table}`);
    await client.end();
  });

  it('creates its table once when several processes open it at the same moment on a fresh database', async () => {
    const fresh = `kqt_results_${randomUUID().slice(0, 8)}`;
    const opened = Array.from({ length: 6 }, () => new PostgresResultBackend(POSTGRES_URL, { table: fresh, logger: { warn: () => undefined } }));
    try {
      const reads = await Promise.allSettled(opened.map((made) => made.get(randomUUID())));
      expect(reads.filter((read) => read.status === 'rejected')).toEqual([]);
    } finally {
      await Promise.all(opened.map((made) => made.close()));
      const client = rawClient();
      await client.query(`DROP TABLE IF EXISTS ${fresh}`);
      await client.end();
    }
  });

  it('stores and reads a result; unknown ids are pending (null)', async () => {
    const results = backend();
    const id = randomUUID();
    expect(await results.get(id)).toBeNull();
    await results.store(meta(id, 'SUCCESS', { n: 1 }));
    expect(await results.get(id)).toMatchObject({ status: 'SUCCESS', result: { n: 1 }, task_id: id });
  });

  it('pushes a result stored by another process to a waiting get()', async () => {
    const waiting = backend();
    const storing = backend();
    const id = randomUUID();
    const pending = waiting.waitFor(id, { timeoutMs: 10_000 });
    await storing.store(meta(id, 'STARTED', null));
    await storing.store(meta(id, 'SUCCESS', 42));
    expect((await pending).result).toBe(42);
  });

  it('listens only once something waits: a worker that only stores results is not sent a notification per result', async () => {
    const storing = backend();
    const client = rawClient();
    const listeners = async (): Promise<number> =>
      Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE query = 'LISTEN ' || $1", [`${table}_ready`])).rows[0]?.n ?? 0);
    try {
      const before = await listeners();
      await storing.store(meta(randomUUID(), 'SUCCESS', 1));
      expect(await listeners()).toBe(before);
      const id = randomUUID();
      const pending = storing.waitFor(id, { timeoutMs: 10_000 });
      await storing.store(meta(id, 'SUCCESS', 2));
      expect((await pending).result).toBe(2);
      expect(await listeners()).toBe(before + 1);
    } finally {
      await client.end();
    }
  });

  it('hands a waiter the result its notification carries, without reading the row; a large one is read', async () => {
    const waiting = backend();
    const client = rawClient();
    try {
      // One wait first, so this backend listens before the bare notification below is sent.
      const warm = randomUUID();
      const warmed = waiting.waitFor(warm, { timeoutMs: 10_000 });
      await backend().store(meta(warm, 'SUCCESS', 0));
      await warmed;
      // A notification alone, no row behind it: the waiter can only have the result from the notification.
      const id = randomUUID();
      const pending = waiting.waitFor(id, { timeoutMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 100)); // its first look (a SELECT finding nothing) is done
      await client.query('SELECT pg_notify($1, $2)', [`${table}_ready`, `${id}\n${JSON.stringify(meta(id, 'SUCCESS', 'carried'))}`]);
      expect((await pending).result).toBe('carried');
      // Past the size a notification carries: the task id alone, and the waiter reads the row.
      const big = randomUUID();
      const bigPending = waiting.waitFor(big, { timeoutMs: 10_000 });
      await backend().store(meta(big, 'SUCCESS', 'x'.repeat(10_000)));
      expect((await bigPending).result).toHaveLength(10_000);
    } finally {
      await client.end();
    }
  });

  it('tells a waiter a carried result without waiting for the stored row to commit, and resolves store() only once it has', async () => {
    const waiting = backend();
    const storing = backend();
    const blocker = rawClient();
    const locked = await blocker.connect();
    try {
      const warm = randomUUID();
      const warmed = waiting.waitFor(warm, { timeoutMs: 10_000 });
      await storing.store(meta(warm, 'SUCCESS', 0));
      await warmed;
      const id = randomUUID();
      const pending = waiting.waitFor(id, { timeoutMs: 10_000 });
      // An uncommitted row with the same key: the store's upsert waits for this transaction, as a commit waits for
      // its WAL flush; the waiter must not wait with it.
      await locked.query('BEGIN');
      await locked.query(`INSERT INTO ${table} (task_id, status, meta) VALUES ($1, 'STARTED', '{}')`, [id]);
      let stored = false;
      const storingDone = storing.store(meta(id, 'SUCCESS', 'early')).then(() => {
        stored = true;
      });
      expect((await pending).result).toBe('early');
      expect(stored).toBe(false);
      await locked.query('ROLLBACK');
      await storingDone;
      expect(await storing.get(id)).toMatchObject({ status: 'SUCCESS', result: 'early' });
    } finally {
      locked.release();
      await blocker.end();
    }
  });

  it('never overwrites a SUCCESS with a later non-success state (Celery rule)', async () => {
    const results = backend();
    const id = randomUUID();
    await results.store(meta(id, 'SUCCESS', 'done'));
    await results.store(meta(id, 'FAILURE', { exc_type: 'X', exc_message: [], exc_module: 'builtins' }));
    expect(await results.get(id)).toMatchObject({ status: 'SUCCESS', result: 'done' });
  });

  it('expires results and times out a wait', async () => {
    const results = backend();
    const id = randomUUID();
    await results.store(meta(id, 'SUCCESS', 1), { expiresMs: 50 });
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await results.get(id)).toBeNull();
    await expect(results.waitFor(randomUUID(), { timeoutMs: 100 })).rejects.toBeInstanceOf(OperationTimeout);
  });

  it('forgets a result', async () => {
    const results = backend();
    const id = randomUUID();
    await results.store(meta(id, 'SUCCESS', 1));
    await results.forget(id);
    expect(await results.get(id)).toBeNull();
  });
});

