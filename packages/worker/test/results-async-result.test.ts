import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import {
  Connection,
  KqError,
  MemoryResultBackend,
  OperationTimeout,
  createResultBackend,
  type ResultBackend,
  type ResultMeta,
} from '@kq/core';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { TaskFailedError, TaskRevokedError } from '../src/errors/errors';
import { AsyncResult, RpcResultBackend, exceptionFromInfo, exceptionInfo, exceptionTraceback } from '../src/results/index';

const run = `kqtest-ar-${randomUUID().slice(0, 8)}`;

function meta(taskId: string, overrides: Partial<ResultMeta> = {}): ResultMeta {
  return { status: 'SUCCESS', result: 4, traceback: null, children: [], date_done: '2026-11-21T13:11:41.492297+00:00', task_id: taskId, ...overrides };
}

function failure(taskId: string, error: unknown): ResultMeta {
  return meta(taskId, { status: 'FAILURE', result: exceptionInfo(error), traceback: exceptionTraceback(error) });
}

/** A result store and a way to write into it as a worker would. */
interface Setup {
  name: string;
  open(): Promise<{ backend: ResultBackend; store(meta: ResultMeta): Promise<void>; close(): Promise<void> }>;
}

const setups: Setup[] = [
  {
    name: 'MemoryResultBackend',
    async open() {
      const backend = new MemoryResultBackend(`${run}-${randomUUID()}`);
      return { backend, store: (value) => backend.store(value), close: () => backend.close() };
    },
  },
  {
    name: 'RpcResultBackend on memory://',
    async open() {
      const connection = new Connection(`memory://${run}`);
      const backend = new RpcResultBackend({ connection, oid: `${run}-${randomUUID()}` });
      const worker = new RpcResultBackend({ connection, oid: `${run}-worker` });
      return {
        backend,
        // The client subscribes before "sending", as the app does; the worker replies to its oid.
        store: async (value) => {
          await backend.onTaskCall(value.task_id);
          await worker.store(value, { replyTo: backend.oid, correlationId: value.task_id });
        },
        close: async () => {
          await backend.close();
          await worker.close();
          await connection.close();
        },
      };
    },
  },
];

for (const setup of setups) {
  describe(`AsyncResult over ${setup.name}`, () => {
    let opened: Awaited<ReturnType<Setup['open']>>;
    const open = async (): Promise<typeof opened> => (opened = await setup.open());
    afterEach(async () => {
      await opened.close();
    });

    it('reports PENDING, then the stored state, and returns a success value', async () => {
      const { backend, store } = await open();
      const id = randomUUID();
      const result = new AsyncResult<{ sum: number }>(id, backend);
      if (backend instanceof RpcResultBackend) await backend.onTaskCall(id);
      expect(await result.state()).toBe('PENDING');
      expect(await result.ready()).toBe(false);
      expect(await result.meta()).toBeNull();
      const value = result.get({ timeout: 10_000 });
      await store(meta(id, { status: 'STARTED', result: { pid: 1, hostname: 'kq@h' }, date_done: null }));
      await store(meta(id, { result: { sum: 4 } }));
      await expect(value).resolves.toEqual({ sum: 4 });
      expect(await result.state()).toBe('SUCCESS');
      expect([await result.ready(), await result.successful(), await result.failed()]).toEqual([true, true, false]);
      expect((await result.meta())?.result).toEqual({ sum: 4 });
    });

    it('throws TaskFailedError with the remote exception, or returns the info with propagate: false', async () => {
      const { backend, store } = await open();
      const id = randomUUID();
      await store(failure(id, new RangeError('out of range')));
      const result = new AsyncResult<number>(id, backend);
      const error = await result.get({ timeout: 5000 }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(TaskFailedError);
      expect(error).toMatchObject({ taskId: id, excType: 'ValueError', excMessage: ['out of range'], excModule: 'builtins' });
      expect((error as TaskFailedError).remoteTraceback).toContain('RangeError: out of range');
      expect(exceptionFromInfo({ exc_type: 'ValueError', exc_message: ['out of range'], exc_module: 'builtins' })).toBeInstanceOf(RangeError);
      expect(await result.failed()).toBe(true);
      await expect(result.get({ propagate: false })).resolves.toEqual({ exc_type: 'ValueError', exc_message: ['out of range'], exc_module: 'builtins' });
    });

    it('throws TaskRevokedError for a revoked task, TaskFailedError for a rejected one', async () => {
      const { backend, store } = await open();
      const revoked = randomUUID();
      await store(meta(revoked, { status: 'REVOKED', result: { exc_type: 'TaskRevokedError', exc_message: ['expired'], exc_module: 'celery.exceptions' } }));
      await expect(new AsyncResult(revoked, backend).get({ timeout: 5000 })).rejects.toThrow(TaskRevokedError);
      await expect(new AsyncResult(revoked, backend).get({ timeout: 5000 })).rejects.toThrow(/revoked \(expired\)/);
      const rejected = randomUUID();
      await store(meta(rejected, { status: 'REJECTED', result: null }));
      await expect(new AsyncResult(rejected, backend).get({ timeout: 5000 })).rejects.toMatchObject({ excType: 'Reject', excModule: 'celery.exceptions' });
      await expect(new AsyncResult(rejected, backend).get({ timeout: 5000, propagate: false })).resolves.toMatchObject({ exc_type: 'Reject' });
    });

    it('times out with OperationTimeout and stops on abort', async () => {
      const { backend } = await open();
      await expect(new AsyncResult(randomUUID(), backend).get({ timeout: 50 })).rejects.toBeInstanceOf(OperationTimeout);
      const controller = new AbortController();
      const waiting = new AsyncResult(randomUUID(), backend).get({ signal: controller.signal });
      controller.abort();
      await expect(waiting).rejects.toBeInstanceOf(KqError);
    });

    it('forgets a result', async () => {
      const { backend, store } = await open();
      const id = randomUUID();
      await store(meta(id));
      const result = new AsyncResult(id, backend);
      await result.get({ timeout: 5000 });
      await result.forget();
      expect(await result.state()).toBe('PENDING');
    });
  });
}

describe('AsyncResult without a backend', () => {
  it('serializes as its id, and every read says how to configure a backend', async () => {
    const result = new AsyncResult('abc', null);
    expect(JSON.stringify({ result })).toBe('{"result":"abc"}');
    expect(String(result)).toBe('abc');
    const reads = [result.state(), result.ready(), result.successful(), result.failed(), result.meta(), result.get(), result.forget()];
    for (const read of reads) {
      const error = await read.then(() => undefined, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(KqError);
      expect((error as Error).message).toContain("backend: 'redis://127.0.0.1:6379/0'");
    }
  });
});

/**
 * A JS task's errors as a Python client sees them (docs/wire.md#on-redis): stored through core's registry into Redis
 * (needs @kq/redis's `createResultBackend`), read back with Python Celery's `AsyncResult.get()`.
 */
const redisUp = await brokerReachable('redis');
const redisBackendLoads = redisUp && (await createResultBackend(`${brokerUrls.redis}/12`).then(async (backend) => (await backend.close(), true), () => false));
const pythonUp = redisBackendLoads && (await new Promise<boolean>((resolve) => execFile('/usr/bin/python3', ['-c', 'import celery, redis'], (error) => resolve(!error))));
if (redisUp && !pythonUp) console.warn('[kq] skipping the Python exception interop test: needs @kq/redis createResultBackend and /usr/bin/python3 with celery');

describe.skipIf(!pythonUp)('exception info read by Python Celery', () => {
  it('re-raises builtins, Celery’s exceptions, and synthesizes classes for JS-only errors', async () => {
    const url = `${brokerUrls.redis}/12`;
    const backend = await createResultBackend(url);
    class PaymentDeclined extends Error {}
    const cases: Array<[unknown, string, string]> = [
      [new RangeError('too big'), 'ValueError', 'builtins'],
      [Object.assign(new Error('k'), { name: 'KeyError' }), 'KeyError', 'builtins'],
      [new TaskRevokedError('terminated'), 'TaskRevokedError', 'celery.exceptions'],
      [new PaymentDeclined('card'), 'PaymentDeclined', 'celery.exceptions'],
    ];
    const ids = cases.map(() => `${run}-${randomUUID()}`);
    try {
      for (const [index, [error]] of cases.entries()) await backend.store(failure(ids[index] as string, error), { expiresMs: 60_000 });
      const script = fileURLToPath(new URL('../../redis/test/interop/result_read.py', import.meta.url));
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile('/usr/bin/python3', [script, url, '5', ...ids], { timeout: 30_000 }, (error, out, stderr) => (error ? reject(new Error(stderr)) : resolve(out))),
      );
      const lines = stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; module: string; args: unknown[] });
      // A type from an unknown module is synthesized by Celery in celery.exceptions' namespace.
      expect(lines.map((line) => [line.type, line.module])).toEqual(cases.map(([, type, module]) => [type, module]));
      expect(lines[0]?.args).toEqual(['too big']);
    } finally {
      for (const id of ids) await backend.forget(id);
      await backend.close();
    }
  });
});
