import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { DecodeError, OperationTimeout, createResultBackend as createFromRegistry, type ResultMeta } from '@kq/core';
import { brokerReachable, brokerUrls, waitFor } from '@kq/test-harness';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisResultBackend, createResultBackend, decodeResultMeta, encodeResultMeta } from '../src/redis-result-backend';

const up = await brokerReachable('redis');
const python = '/usr/bin/python3';
const pythonUp = up && (await pythonImports(['celery', 'redis']));
/** Core's registry loads `createResultBackend` from @kq/redis's index once it exports it. */
const registryWired = typeof ((await import('../src/index')) as Record<string, unknown>)['createResultBackend'] === 'function';
if (!registryWired) console.warn('[kq] skipping the registry test: @kq/redis does not export createResultBackend yet');

/** Results in DB 12; every key this file makes carries `run` (as the global key prefix, or in the task ids). */
const DB_URL = (() => {
  const url = new URL(brokerUrls.redis);
  url.pathname = '/12';
  return url.toString();
})();
const run = `kqtest-rb-${randomUUID().slice(0, 8)}`;
const interop = fileURLToPath(new URL('./interop/', import.meta.url));

function meta(taskId: string, overrides: Partial<ResultMeta> = {}): ResultMeta {
  return { status: 'SUCCESS', result: 4, traceback: null, children: [], date_done: '2026-11-21T13:11:41.492297', task_id: taskId, ...overrides };
}

function taskId(): string {
  return `${run}-${randomUUID()}`;
}

function pythonImports(modules: string[]): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(python, ['-c', `import ${modules.join(', ')}`], { timeout: 20_000 }, (error) => {
      if (error) console.warn(`[kq] skipping Python result interop tests: ${python} cannot import ${modules.join(', ')}`);
      resolve(!error);
    });
  });
}

function runPython(script: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(python, [interop + script, ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${script} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

async function numsub(redis: Redis, channel: string): Promise<number> {
  const reply = (await redis.pubsub('NUMSUB', channel)) as [string, number];
  return Number(reply[1]);
}

describe.skipIf(!up)('RedisResultBackend (Celery’s Redis result backend)', () => {
  let redis: Redis;
  const backends: RedisResultBackend[] = [];
  const open = (options: ConstructorParameters<typeof RedisResultBackend>[1] = {}): RedisResultBackend => {
    const backend = new RedisResultBackend(DB_URL, { keyPrefix: run, connectionName: run, ...options });
    backends.push(backend);
    return backend;
  };

  beforeAll(() => {
    redis = new Redis(DB_URL);
  });
  afterEach(async () => {
    await Promise.all(backends.splice(0).map((backend) => backend.close()));
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `*${run}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
    redis.disconnect();
  });

  it('stores Celery’s exact bytes at celery-task-meta-<id> with SETEX 86400, and reads them back', async () => {
    const backend = open({ keyPrefix: '' });
    const id = taskId();
    await backend.store(meta(id));
    const key = `celery-task-meta-${id}`;
    expect(await redis.get(key)).toBe(
      `{"status": "SUCCESS", "result": 4, "traceback": null, "children": [], "date_done": "2026-11-21T13:11:41.492297", "task_id": "${id}"}`,
    );
    const ttl = await redis.ttl(key);
    expect(ttl).toBeGreaterThan(86_000);
    expect(ttl).toBeLessThanOrEqual(86_400);
    expect(await backend.get(id)).toEqual(meta(id));
    expect(await backend.get(taskId())).toBeNull();
  });

  it('writes fields in Celery’s order: group_id, parent_id, extended fields and extras before task_id', () => {
    const text = encodeResultMeta({
      task_id: 't1',
      queue: 'celery',
      retries: 0,
      worker: 'kq@host',
      kwargs: {},
      args: [2, 2],
      name: 'tasks.add',
      parent_id: 'p1',
      group_id: 'g1',
      date_done: null,
      children: null,
      traceback: null,
      result: { pid: 7, hostname: 'kq@host' },
      status: 'STARTED',
      ...({ stamps: { x: 'é' } } as object),
    });
    expect(text).toBe(
      '{"status": "STARTED", "result": {"pid": 7, "hostname": "kq@host"}, "traceback": null, "children": null, "date_done": null, ' +
        '"group_id": "g1", "parent_id": "p1", "name": "tasks.add", "args": [2, 2], "kwargs": {}, "worker": "kq@host", "retries": 0, ' +
        '"queue": "celery", "stamps": {"x": "\\u00e9"}, "task_id": "t1"}',
    );
    // Null group/parent ids are left out, as Celery does when the request has none; an undefined result is null.
    const bare = encodeResultMeta({ ...meta('t2'), group_id: null, parent_id: null, result: undefined });
    expect(bare).toBe('{"status": "SUCCESS", "result": null, "traceback": null, "children": [], "date_done": "2026-11-21T13:11:41.492297", "task_id": "t2"}');
    expect(JSON.parse(encodeResultMeta(meta('t3', { result: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)) })))).toMatchObject({
      result: { __type__: 'datetime', __value__: '2024-01-02T03:04:05+00:00' },
    });
  });

  it('applies the global key prefix with Celery’s "_" rule and names the channel after the key', async () => {
    const plain = open({ keyPrefix: `${run}app` });
    const colon = open({ keyPrefix: `${run}app:` });
    const id = taskId();
    expect(plain.keyFor(id)).toBe(`${run}app_celery-task-meta-${id}`);
    expect(colon.keyFor(id)).toBe(`${run}app:celery-task-meta-${id}`);
    await plain.store(meta(id));
    expect(await redis.exists(`${run}app_celery-task-meta-${id}`)).toBe(1);
    expect(await colon.get(id)).toBeNull();
  });

  it('honours expiry: result_expires in seconds, per-store expiresMs, and 0 for a plain SET that never expires', async () => {
    const forever = open({ resultExpiresMs: 0 });
    const idForever = taskId();
    await forever.store(meta(idForever));
    expect(await redis.ttl(forever.keyFor(idForever))).toBe(-1);

    const hourly = open({ resultExpiresMs: 3_600_000 });
    const idHourly = taskId();
    await hourly.store(meta(idHourly));
    const ttl = await redis.ttl(hourly.keyFor(idHourly));
    expect(ttl).toBeGreaterThan(3_500);
    expect(ttl).toBeLessThanOrEqual(3_600);

    const idShort = taskId();
    await hourly.store(meta(idShort), { expiresMs: 1000 });
    expect(await redis.ttl(hourly.keyFor(idShort))).toBeLessThanOrEqual(1);
    await waitFor(async () => (await hourly.get(idShort)) === null, 5000, 'the 1 s result to expire');
  });

  it('never overwrites a stored SUCCESS (Celery’s rule), but later states replace earlier non-success ones', async () => {
    const backend = open();
    const id = taskId();
    await backend.store(meta(id, { status: 'STARTED', result: { pid: 1, hostname: 'w' }, date_done: null }));
    expect((await backend.get(id))?.status).toBe('STARTED');
    await backend.store(meta(id, { result: 42 }));
    await backend.store(meta(id, { status: 'FAILURE', result: { exc_type: 'ValueError', exc_message: ['late'], exc_module: 'builtins' } }));
    await backend.store(meta(id, { result: 43 }));
    expect(await backend.get(id)).toMatchObject({ status: 'SUCCESS', result: 42 });
    // A value that is not a readable meta does not block a store.
    const junk = taskId();
    await redis.set(backend.keyFor(junk), 'not json at all');
    await expect(backend.get(junk)).rejects.toBeInstanceOf(DecodeError);
    await backend.store(meta(junk));
    expect((await backend.get(junk))?.status).toBe('SUCCESS');
    // A SUCCESS written by another client with its keys in another order is still recognised.
    const reordered = taskId();
    await redis.set(backend.keyFor(reordered), JSON.stringify({ result: 'first', task_id: reordered, status: 'SUCCESS' }));
    await backend.store(meta(reordered, { result: 'second' }));
    expect(await backend.get(reordered)).toMatchObject({ status: 'SUCCESS', result: 'first' });
  });

  it('wakes a waiter by PUBLISH: one GET to close the race, no polling', async () => {
    const waiting = open();
    const storing = open();
    const id = taskId();
    const key = waiting.keyFor(id);
    // Distinct command objects: ioredis passes a command queued before the connection was up through sendCommand twice.
    const gets = new Set<object>();
    watchCommands((command) => {
      if (command.name === 'get' && command.args[0] === key) gets.add(command);
    });
    const result = waiting.waitFor(id, { timeoutMs: 10_000 });
    await waitFor(async () => (await numsub(redis, key)) === 1, 5000, 'the waiter to subscribe');
    // Long enough that any poller would have read the key again; this bounds the check, it asserts no timing.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(gets.size).toBe(1);
    await storing.store(meta(id, { result: 'pushed' }));
    await expect(result).resolves.toMatchObject({ status: 'SUCCESS', result: 'pushed', task_id: id });
    // Only the waiter's: the store checks for an earlier SUCCESS inside its script.
    expect(gets.size).toBe(1);
    await waitFor(async () => (await numsub(redis, key)) === 0, 5000, 'the channel to be unsubscribed after the result');
  });

  it('unsubscribes released channels together, and keeps one subscribed again before that', async () => {
    const backend = open();
    const storing = open();
    const [first, second] = [taskId(), taskId()];
    const unsubscribes: string[][] = [];
    watchCommands((command) => {
      if (command.name === 'unsubscribe') unsubscribes.push(command.args.map(String));
    });
    const waits = [backend.waitFor(first, { timeoutMs: 10_000 }), backend.waitFor(second, { timeoutMs: 10_000 })];
    await waitFor(async () => (await numsub(redis, backend.keyFor(second))) === 1, 5000, 'both waiters to subscribe');
    await Promise.all([storing.store(meta(first)), storing.store(meta(second))]);
    await Promise.all(waits);
    // Released, not yet unsubscribed: the first task is waited for again (an early subscription) meanwhile.
    await backend.onTaskCall(first);
    await waitFor(async () => (await numsub(redis, backend.keyFor(second))) === 0, 5000, 'the released channel to be unsubscribed');
    expect(unsubscribes).toEqual([[backend.keyFor(second)]]);
    expect(await numsub(redis, backend.keyFor(first))).toBe(1);
  });

  it('resolves at once from the stored value when the result was ready before waiting', async () => {
    const backend = open();
    const id = taskId();
    await backend.store(meta(id, { status: 'FAILURE', result: { exc_type: 'ValueError', exc_message: ['x'], exc_module: 'builtins' } }));
    await expect(backend.waitFor(id, { timeoutMs: 5000 })).resolves.toMatchObject({ status: 'FAILURE' });
  });

  it('ignores non-ready pushes and undecodable messages, and resolves on the ready state', async () => {
    const warnings: string[] = [];
    const backend = open({ logger: { warn: (text) => warnings.push(text) } });
    const id = taskId();
    const key = backend.keyFor(id);
    let settled = false;
    const result = backend.waitFor(id, { timeoutMs: 10_000 }).finally(() => (settled = true));
    await waitFor(async () => (await numsub(redis, key)) === 1, 5000, 'the waiter to subscribe');
    await backend.store(meta(id, { status: 'STARTED', result: null, date_done: null }));
    await redis.publish(key, 'garbage{');
    await redis.publish(key, JSON.stringify({ no: 'status' }));
    await redis.ping();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(settled).toBe(false);
    await backend.store(meta(id, { status: 'REVOKED', result: { exc_type: 'TaskRevokedError', exc_message: ['revoked'], exc_module: 'celery.exceptions' } }));
    await expect(result).resolves.toMatchObject({ status: 'REVOKED' });
    expect(warnings.filter((text) => text.includes('undecodable'))).toHaveLength(2);
  });

  it('multiplexes many waiters on one subscriber connection and reference-counts each channel', async () => {
    const backend = open({ connectionName: `${run}-mux` });
    const ids = Array.from({ length: 50 }, () => taskId());
    const waits = ids.map((id) => backend.waitFor(id, { timeoutMs: 10_000 }));
    // Two waiters on one task; one gives up, the other must still be woken.
    const shared = ids[0] as string;
    const impatient = backend.waitFor(shared, { timeoutMs: 50 });
    await expect(impatient).rejects.toBeInstanceOf(OperationTimeout);
    const subscribers = async (): Promise<string[]> =>
      String(await redis.client('LIST'))
        .split('\n')
        .filter((line) => line.includes(` name=${run}-mux.results.`) && line.includes('.sub '));
    await waitFor(async () => (await subscribers()).some((line) => line.includes(' sub=50 ')), 5000, 'one connection subscribed to 50 channels');
    expect(await subscribers()).toHaveLength(1);
    expect(await numsub(redis, backend.keyFor(shared))).toBe(1);
    const storing = open();
    await Promise.all(ids.map((id, n) => storing.store(meta(id, { result: n }))));
    const results = await Promise.all(waits);
    expect(results.map((result) => result.result)).toEqual(ids.map((_, n) => n));
    await waitFor(async () => (await subscribers()).some((line) => line.includes(' sub=0 ')), 5000, 'every channel to be unsubscribed');
  });

  it('subscribes early on onTaskCall (before the task is sent) and drops the subscription on a ready result', async () => {
    const backend = open();
    const id = taskId();
    const key = backend.keyFor(id);
    await backend.onTaskCall(id); // returns without waiting for Redis to confirm the SUBSCRIBE, as redis-py does
    await waitFor(async () => (await numsub(redis, key)) === 1, 5000, 'the early subscription');
    await open().store(meta(id));
    await waitFor(async () => (await numsub(redis, key)) === 0, 5000, 'the early subscription to end with the result');
    await expect(backend.waitFor(id, { timeoutMs: 5000 })).resolves.toMatchObject({ status: 'SUCCESS' });
  });

  it('keeps a result pushed to an early subscription before anyone waited: the wait that follows sends nothing', async () => {
    const backend = open();
    const id = taskId();
    const key = backend.keyFor(id);
    await backend.onTaskCall(id);
    await waitFor(async () => (await numsub(redis, key)) === 1, 5000, 'the early subscription');
    await open().store(meta(id, { result: 'early' }));
    await waitFor(async () => (await numsub(redis, key)) === 0, 5000, 'the early subscription to end with the result');
    // Distinct command objects: ioredis passes a command queued before the connection was up through sendCommand twice.
    const sent = new Map<object, string>();
    watchCommands((command) => {
      if (command.args.map(String).includes(key)) sent.set(command, command.name);
    });
    await expect(backend.waitFor(id, { timeoutMs: 5000 })).resolves.toMatchObject({ status: 'SUCCESS', result: 'early' });
    expect([...sent.values()]).toEqual([]);
    // Taken once: a second wait reads the key as before.
    await expect(backend.waitFor(id, { timeoutMs: 5000 })).resolves.toMatchObject({ status: 'SUCCESS', result: 'early' });
    expect([...sent.values()].sort()).toEqual(['get', 'subscribe']);
  });

  it('sends no GET for a task subscribed to before it was sent whose result is pushed', async () => {
    const backend = open();
    const id = taskId();
    const key = backend.keyFor(id);
    await backend.onTaskCall(id);
    await waitFor(async () => (await numsub(redis, key)) === 1, 5000, 'the early subscription');
    const gets = new Set<object>();
    watchCommands((command) => {
      if (command.name === 'get' && command.args[0] === key) gets.add(command);
    });
    const result = backend.waitFor(id, { timeoutMs: 10_000 });
    await open().store(meta(id, { result: 'pushed' }));
    await expect(result).resolves.toMatchObject({ result: 'pushed' });
    // Past the delayed read: it was never sent.
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(gets.size).toBe(0);
  });

  it('still reads the key for a task subscribed to before it was sent when no push comes (its SUCCESS was stored before)', async () => {
    const backend = open();
    for (const timeoutMs of [10_000, 150]) {
      const id = taskId();
      await backend.store(meta(id, { result: 'stored before' }));
      await backend.onTaskCall(id);
      await expect(backend.waitFor(id, { timeoutMs })).resolves.toMatchObject({ result: 'stored before' });
    }
  });

  it('sends no GET when the result was pushed before its SUBSCRIBE was confirmed', async () => {
    const backend = open();
    const storing = open();
    const id = taskId();
    const key = backend.keyFor(id);
    await backend.get(taskId());
    const gets: string[] = [];
    let woken = false;
    watchCommands((command) => {
      if (command.name === 'get' && command.args[0] === key) gets.push(key);
    });
    // The SUBSCRIBE's confirmation is held back until the result was published and its push handled: what happens
    // when the push arrives in the same read as the confirmation.
    const originalSubscribe = Redis.prototype.subscribe;
    vi.spyOn(Redis.prototype, 'subscribe').mockImplementation(function (this: Redis, ...args: unknown[]) {
      return (originalSubscribe as (...a: unknown[]) => Promise<unknown>).apply(this, args).then(async (reply) => {
        await storing.store(meta(id, { result: 'pushed' }));
        await waitFor(() => woken, 5000, 'the push');
        return reply;
      });
    } as Redis['subscribe']);
    await expect(
      backend.waitFor(id, { timeoutMs: 5000 }).then((result) => {
        woken = true;
        return result;
      }),
    ).resolves.toMatchObject({ result: 'pushed' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(gets).toEqual([]);
  });

  it('keeps every subscription made while its subscriber connection is still connecting, on a database other than 0', async () => {
    // Before the fix the subscriber SELECTed its database after the first SUBSCRIBE had put it in subscriber mode:
    // the SELECT failed and a second SUBSCRIBE sent meanwhile was lost, so its waiter was never woken.
    for (const pause of [0, 0, 0, 1, 1, 1]) {
      const backend = open();
      await backend.get(taskId()); // the command connection is up, the subscriber not yet
      const waited = taskId();
      void backend.onTaskCall(taskId());
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      const result = backend.waitFor(waited, { timeoutMs: 3000 });
      await new Promise((resolve) => setTimeout(resolve, 50)); // subscribed and read (nothing yet): now only a push wakes it
      await open().store(meta(waited));
      await expect(result).resolves.toMatchObject({ status: 'SUCCESS' });
    }
  });

  it('caps early subscriptions nobody waits for, dropping the oldest', async () => {
    const backend = open({ maxEarlySubscriptions: 2 });
    const [a, b, c] = [taskId(), taskId(), taskId()];
    for (const id of [a, b, c]) await backend.onTaskCall(id);
    await waitFor(async () => (await numsub(redis, backend.keyFor(a))) === 0, 5000, 'the oldest early subscription to be dropped');
    await waitFor(async () => (await numsub(redis, backend.keyFor(c))) === 1, 5000, 'the newest early subscription');
    await backend.forget(c);
    await waitFor(async () => (await numsub(redis, backend.keyFor(c))) === 0, 5000, 'forget to drop the early subscription');
  });

  it('times out with OperationTimeout, stops on abort, and rejects waiters on close', async () => {
    const backend = open();
    await expect(backend.waitFor(taskId(), { timeoutMs: 100 })).rejects.toBeInstanceOf(OperationTimeout);
    const controller = new AbortController();
    const aborted = backend.waitFor(taskId(), { signal: controller.signal });
    controller.abort();
    await expect(aborted).rejects.toBeInstanceOf(OperationTimeout);
    const pending = expect(backend.waitFor(taskId())).rejects.toThrow(/closed/);
    await backend.close();
    await pending;
    await expect(backend.get(taskId())).rejects.toThrow(/closed/);
  });

  it('forget deletes the stored result', async () => {
    const backend = open();
    const id = taskId();
    await backend.store(meta(id));
    await backend.forget(id);
    expect(await redis.exists(backend.keyFor(id))).toBe(0);
    expect(await backend.get(id)).toBeNull();
  });

  it('survives a dropped subscriber connection: resubscribes and reads what was stored meanwhile', async () => {
    const backend = open({ connectionName: `${run}-kill` });
    const id = taskId();
    const key = backend.keyFor(id);
    const result = backend.waitFor(id, { timeoutMs: 15_000 });
    await waitFor(async () => (await numsub(redis, key)) === 1, 5000, 'the waiter to subscribe');
    const line = String(await redis.client('LIST')).split('\n').find((entry) => entry.includes(` name=${run}-kill.results.`) && entry.includes('.sub '));
    const clientId = /\bid=(\d+)/.exec(line ?? '')?.[1];
    expect(clientId).toBeDefined();
    // Store while the subscriber is gone: the PUBLISH reaches nobody, the read after resubscribing finds it.
    await redis.client('KILL', 'ID', clientId as string);
    await open().store(meta(id, { result: 'while away' }));
    await expect(result).resolves.toMatchObject({ result: 'while away' });
  });

  it('createResultBackend reads Celery’s option names (global_keyprefix, result_expires in s, master_name)', async () => {
    const backend = createResultBackend(DB_URL, { result_backend_transport_options: { global_keyprefix: `${run}cel` }, result_expires: 60 });
    backends.push(backend);
    expect(backend.keyFor('x')).toBe(`${run}cel_celery-task-meta-x`);
    const id = taskId();
    await backend.store(meta(id));
    const ttl = await redis.ttl(backend.keyFor(id));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60);
    const direct = createResultBackend(DB_URL, { keyPrefix: `${run}cel:` });
    backends.push(direct);
    expect(direct.keyFor('x')).toBe(`${run}cel:celery-task-meta-x`);
    expect(() => createResultBackend(DB_URL, { keyPrefix: 5 })).toThrow(/keyPrefix must be a string/);
    expect(() => createResultBackend('sentinel://127.0.0.1:26379')).toThrow(/master/);
  });

  it.skipIf(!registryWired)('is created by core’s registry for redis:// URLs', async () => {
    const backend = await createFromRegistry(DB_URL, { global_keyprefix: `${run}reg` });
    await backend.close();
    expect(backend).toBeInstanceOf(RedisResultBackend);
    expect((backend as RedisResultBackend).keyFor('x')).toBe(`${run}reg_celery-task-meta-x`);
  });

  it('decodes what old or partial writers leave out, and Python’s NaN literal', () => {
    expect(decodeResultMeta('{"status": "SUCCESS", "result": NaN}', 'abc')).toEqual({
      status: 'SUCCESS',
      result: Number.NaN,
      traceback: null,
      children: null,
      date_done: null,
      task_id: 'abc',
    });
    expect(() => decodeResultMeta('[1, 2]', 'abc')).toThrow(DecodeError);
  });

  describe.skipIf(!pythonUp)('interop with Python Celery 5.2 (redis://…/12, no key prefix)', () => {
    it('Python’s AsyncResult.get() reads kq’s SUCCESS and re-raises kq’s FAILURE as ValueError', async () => {
      const backend = open({ keyPrefix: '' });
      const ok = taskId();
      const failed = taskId();
      await backend.store(meta(ok, { result: { x: [1, 2], s: 'naïve' } }));
      await backend.store(
        meta(failed, {
          status: 'FAILURE',
          result: { exc_type: 'ValueError', exc_message: ['bad value'], exc_module: 'builtins' },
          traceback: 'Error: bad value\n    at task (file.js:1:1)',
        }),
      );
      const lines = (await runPython('result_read.py', [DB_URL, '5', ok, failed])).trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines[0]).toEqual({ id: ok, ok: true, value: { x: [1, 2], s: 'naïve' }, state: 'SUCCESS' });
      expect(lines[1]).toEqual({ id: failed, ok: false, type: 'ValueError', module: 'builtins', args: ['bad value'], state: 'FAILURE' });
    });

    it('a waiting Python client is woken by kq’s PUBLISH', async () => {
      const backend = open({ keyPrefix: '' });
      const id = taskId();
      const reading = runPython('result_read.py', [DB_URL, '20', id]);
      await waitFor(async () => (await numsub(redis, backend.keyFor(id))) === 1, 15_000, 'Python to subscribe');
      await backend.store(meta(id, { result: 'hello python' }));
      expect(JSON.parse((await reading).trim())).toEqual({ id, ok: true, value: 'hello python', state: 'SUCCESS' });
    });

    it('kq reads (and is woken by) results stored by Python’s backend, in the same shape', async () => {
      const backend = open({ keyPrefix: '' });
      const ok = taskId();
      const failed = taskId();
      const waits = [backend.waitFor(ok, { timeoutMs: 20_000 }), backend.waitFor(failed, { timeoutMs: 20_000 })];
      await waitFor(async () => (await numsub(redis, backend.keyFor(failed))) === 1, 5000, 'kq to subscribe');
      await runPython('result_store.py', [DB_URL, ok, failed]);
      const [pushedOk, pushedFailed] = await Promise.all(waits);
      expect(pushedOk).toEqual({
        status: 'SUCCESS',
        result: { a: 1 },
        traceback: null,
        children: null,
        date_done: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/) as unknown as string,
        task_id: ok,
      });
      expect(pushedFailed).toMatchObject({
        status: 'FAILURE',
        result: { exc_type: 'ValueError', exc_message: ['boom'], exc_module: 'builtins' },
        traceback: expect.stringContaining('ValueError: boom') as unknown as string,
        task_id: failed,
      });
      expect(await backend.get(ok)).toEqual(pushedOk);
      expect(await backend.get(failed)).toEqual(pushedFailed);
    });
  });
});

/** Sees every command any ioredis client sends (restored by `vi.restoreAllMocks`), then sends it as usual. */
function watchCommands(see: (command: Parameters<Redis['sendCommand']>[0]) => void): void {
  const original = Redis.prototype.sendCommand;
  vi.spyOn(Redis.prototype, 'sendCommand').mockImplementation(function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
    see(args[0]);
    return original.apply(this, args);
  });
}
