/**
 * Serializers and compression across languages: msgpack, yaml and bzip2 work both ways with nothing to call but the
 * accept list; pickle is refused by kq with a stored ContentDisallowed, so a Python caller's get() fails at once
 * instead of waiting for ever.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { brokerReachable, pythonAvailable } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';
import { runPythonClient, startPythonWorker, type PythonOutcome } from './fixtures/python-client';

const python = await pythonAvailable(['celery', 'msgpack', 'yaml']);

const setups = [
  { kind: 'redis' as const, broker: 'redis://127.0.0.1:6379/12', backend: 'redis://127.0.0.1:6379/12', pyBroker: 'redis://127.0.0.1:6379/12' },
  { kind: 'amqp' as const, broker: 'amqp://guest:guest@127.0.0.1:5672', backend: 'rpc://', pyBroker: 'amqp://guest:guest@127.0.0.1:5672//' },
];


for (const setup of setups) {
  const up = await brokerReachable(setup.kind, setup.broker);
  describe.skipIf(!up || !python)(`serializers with Python Celery on ${setup.kind}`, () => {
    const ns = `kqser${randomUUID().slice(0, 8)}`;
    const env = {
      KQ_INTEROP_BROKER: setup.pyBroker,
      KQ_INTEROP_BACKEND: setup.kind === 'redis' ? setup.backend : 'rpc://',
      KQ_INTEROP_PY_QUEUE: `${ns}.py`,
      KQ_INTEROP_NAMESPACE: ns,
      KQ_INTEROP_ACCEPT: 'json,msgpack,yaml',
    };
    let app: App;
    let worker: Worker;
    let pythonWorker: ChildProcess;

    const sendFromPython = (name: string, args: unknown[], options: Record<string, unknown>): Promise<PythonOutcome> =>
      runPythonClient('celery_client.py', { name, args, options: { queue: `${ns}.kq`, ...options } }, env);

    beforeAll(async () => {
      // Nothing but the accept list: msgpack and yaml load on their own.
      app = new App('serializers', {
        broker: setup.broker,
        backend: setup.backend,
        controlExchange: ns,
        taskDefaultQueue: `${ns}.kq`,
        acceptContent: ['json', 'msgpack', 'yaml'],
      });
      app.task('interop.kq_add', (_ctx, x: number, y: number) => x + y);
      worker = app.worker({ hostname: `kq@${ns}`, concurrency: 2, logger: new Logger('ser', { level: 'critical', sink: () => undefined }) });
      await worker.start();
      pythonWorker = startPythonWorker(`py@${ns}`, env);
    });

    afterAll(async () => {
      pythonWorker?.kill('SIGKILL');
      await worker?.stop({ cold: true });
      await app?.close();
    });

    it.each([
      ['msgpack', { serializer: 'msgpack' }],
      ['yaml', { serializer: 'yaml' }],
      ['bzip2-compressed json', { compression: 'bzip2' }],
      ['bzip2-compressed msgpack', { serializer: 'msgpack', compression: 'bzip2' }],
    ])('runs a task Python sent as %s', async (_label, options) => {
      expect(await sendFromPython('interop.kq_add', [2, 3], options)).toMatchObject({ status: 'SUCCESS', result: 5 });
    });

    it('refuses a pickled task with a stored ContentDisallowed: the Python caller fails at once', async () => {
      const outcome = await sendFromPython('interop.kq_add', [2, 3], { serializer: 'pickle' });
      expect(outcome).toMatchObject({ status: 'FAILURE', exc_type: 'ContentDisallowed' });
    });

    it.each([
      ['msgpack', { serializer: 'msgpack' }],
      ['yaml', { serializer: 'yaml' }],
      ['bzip2-compressed json', { compression: 'bzip2' }],
    ] as const)('sends a task a Python worker runs, as %s', async (_label, options) => {
      const result = await app.sendTask<number>('interop.py_add', [20, 22], {}, { queue: `${ns}.py`, ...options });
      expect(await result.get({ timeout: 20_000 })).toBe(42);
    });
  });
}
