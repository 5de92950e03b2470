/**
 * Issue 7's interop proof against real Python Celery 5 (Debian's python3-celery): tasks cross in both directions on
 * Redis (redis result backend) and RabbitMQ (rpc:// results), with countdown, retries, expiry and failures.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { brokerReachable, pythonAvailable } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { TaskFailedError } from '../src/errors/errors';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';
import { runPythonClient, startPythonWorker, type PythonOutcome } from './fixtures/python-client';

const python = await pythonAvailable(['celery']);

const setups = [
  { kind: 'redis' as const, broker: 'redis://127.0.0.1:6379/7', backend: 'redis://127.0.0.1:6379/7', pyBroker: 'redis://127.0.0.1:6379/7', pyBackend: 'redis://127.0.0.1:6379/7' },
  { kind: 'amqp' as const, broker: 'amqp://guest:guest@127.0.0.1:5672', backend: 'rpc://', pyBroker: 'amqp://guest:guest@127.0.0.1:5672//', pyBackend: 'rpc://' },
];


for (const setup of setups) {
  const up = await brokerReachable(setup.kind, setup.broker);
  describe.skipIf(!up || !python)(`worker interop with Python Celery on ${setup.kind}`, () => {
    const ns = `kqi${randomUUID().slice(0, 8)}`;
    const env = {
      KQ_INTEROP_BROKER: setup.pyBroker,
      KQ_INTEROP_BACKEND: setup.pyBackend,
      KQ_INTEROP_PY_QUEUE: `${ns}.py`,
      KQ_INTEROP_NAMESPACE: ns,
    };
    let app: App;
    let worker: Worker;
    let pythonWorker: ChildProcess;
    let kqRetries = 0;

    const sendFromPython = (name: string, args: unknown[] = [], options: Record<string, unknown> = {}, kwargs: Record<string, unknown> = {}): Promise<PythonOutcome> =>
      runPythonClient('celery_client.py', { name, args, kwargs, options: { queue: `${ns}.kq`, ...options } }, env);

    beforeAll(async () => {
      app = new App('interop', { broker: setup.broker, backend: setup.backend, controlExchange: ns, taskDefaultQueue: `${ns}.kq`, resultExpires: 600 });
      app.task('interop.kq_add', (_ctx, x: number, y: number) => x + y);
      app.task('interop.kq_kwadd', (_ctx, x: number, y: number, scale: number = 1) => (x + y) * scale, { params: ['x', 'y', 'scale?'] });
      app.task('interop.kq_fail', () => {
        throw new RangeError('kq says no');
      });
      app.task(
        'interop.kq_retry',
        async (ctx) => {
          kqRetries++;
          if (ctx.request.retries < 2) return ctx.retry({ countdown: 0.2 });
          return ctx.request.retries;
        },
        { maxRetries: 3 },
      );
      worker = app.worker({ hostname: `kq@${ns}`, concurrency: 4, logger: new Logger('interop', { level: 'critical', sink: () => undefined }) });
      await worker.start();
      pythonWorker = startPythonWorker(`py@${ns}`, env);
    });

    afterAll(async () => {
      pythonWorker?.kill('SIGKILL');
      await worker?.stop({ cold: true });
      await app?.close();
    });

    it('runs a task sent by Python and Python reads the result', async () => {
      expect(await sendFromPython('interop.kq_add', [2, 3])).toMatchObject({ status: 'SUCCESS', result: 5 });
    });

    it("binds a Python caller's keyword arguments to the kq task's declared parameters", async () => {
      expect(await sendFromPython('interop.kq_kwadd', [], {}, { x: 2, y: 5 })).toMatchObject({ status: 'SUCCESS', result: 7 });
      expect(await sendFromPython('interop.kq_kwadd', [2], {}, { y: 5, scale: 10 })).toMatchObject({ status: 'SUCCESS', result: 70 });
    });

    it("fails a Python call that does not fit the kq task's parameters with Python's TypeError", async () => {
      const unexpected = await sendFromPython('interop.kq_kwadd', [1], {}, { z: 2 });
      expect(unexpected).toMatchObject({ status: 'FAILURE', exc_type: 'TypeError' });
      expect(unexpected.exc).toContain("kq_kwadd() got an unexpected keyword argument 'z'");
      const missing = await sendFromPython('interop.kq_kwadd', [], {}, { x: 1 });
      expect(missing.exc).toContain("kq_kwadd() missing 1 required positional argument: 'y'");
      // A task that declares no parameters cannot place keyword arguments: a TypeError too, never a silent null.
      expect(await sendFromPython('interop.kq_add', [], {}, { x: 2, y: 5 })).toMatchObject({ status: 'FAILURE', exc_type: 'TypeError' });
    });

    it('sends keyword arguments a Python task binds by name', async () => {
      const result = await app.sendTask<number>('interop.py_add', [], { x: 20, y: 22 }, { queue: `${ns}.py` });
      expect(await result.get({ timeout: 20_000 })).toBe(42);
    });

    it('reports a kq failure to Python as an exception', async () => {
      const outcome = await sendFromPython('interop.kq_fail');
      expect(outcome.status).toBe('FAILURE');
      expect(outcome.exc_type).toBe('ValueError'); // a JS RangeError is stored as Python's ValueError
      expect(outcome.exc).toContain('kq says no');
    });

    it('honours a countdown set by Python', async () => {
      const outcome = await sendFromPython('interop.kq_add', [1, 1], { countdown: 1 });
      expect(outcome).toMatchObject({ status: 'SUCCESS', result: 2 });
      expect(outcome.elapsed).toBeGreaterThanOrEqual(0.9);
    });

    it('retries a kq task sent by Python', async () => {
      expect(await sendFromPython('interop.kq_retry')).toMatchObject({ status: 'SUCCESS', result: 2 });
      expect(kqRetries).toBe(3);
    });

    it('discards a task Python sent already expired', async () => {
      const outcome = await sendFromPython('interop.kq_add', [1, 2], { expires: 0.001, countdown: 0.2 });
      expect(outcome.status).toBe('REVOKED');
    });

    it('runs a task sent by kq on a Python worker and kq reads the result', async () => {
      const result = await app.sendTask('interop.py_add', [20, 22], {}, { queue: `${ns}.py` });
      expect(await result.get({ timeout: 20_000 })).toBe(42);
    }, 30_000);

    it('gets a Python failure as TaskFailedError with the Python exception type', async () => {
      const result = await app.sendTask('interop.py_fail', [], {}, { queue: `${ns}.py` });
      const error = await result.get({ timeout: 20_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TaskFailedError);
      expect((error as TaskFailedError).excType).toBe('ValueError');
    }, 30_000);

    it('lets Python retries run their course for a kq-sent task', async () => {
      const result = await app.sendTask('interop.py_retry', [], {}, { queue: `${ns}.py` });
      expect(await result.get({ timeout: 20_000 })).toBe(2);
    }, 30_000);

    it('honours a countdown set by kq on a Python worker', async () => {
      const sent = Date.now();
      const result = await app.sendTask('interop.py_add', [1, 2], {}, { queue: `${ns}.py`, countdown: 1 });
      expect(await result.get({ timeout: 20_000 })).toBe(3);
      expect(Date.now() - sent).toBeGreaterThanOrEqual(900);
    }, 30_000);
  });
}
