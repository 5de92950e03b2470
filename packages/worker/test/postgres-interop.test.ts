/**
 * A Python Celery 5 fleet on Kombu's SQLAlchemy transport (`sqla+postgresql://`) and kq workers on `postgresql://`
 * share queues both ways: same tables, same envelope, results through the Redis backend both read.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { brokerReachable, pythonAvailable, pythonInterpreter } from '@kq/test-harness';
import { App } from '../src/app/app';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';
import { interopDir, runPythonClient, type PythonOutcome } from './fixtures/python-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSchema } from '../../postgres/test/postgres-test-env';

const BACKEND = 'redis://127.0.0.1:6379/8';
const ready =
  (await brokerReachable('postgres')) && (await brokerReachable('redis')) && (await pythonAvailable(['celery', 'sqlalchemy', 'psycopg2']));

describe.skipIf(!ready)('PostgreSQL interop with Python Celery on sqla+postgresql', () => {
  const ns = `kqpg${randomUUID().slice(0, 8)}`;
  // Kombu's default table names, in a schema of this test's own (Kombu's index names are fixed).
  let schema: Awaited<ReturnType<typeof withSchema>>;
  let env: Record<string, string>;
  let app: App;
  let worker: Worker;
  let pythonWorker: ChildProcess | undefined;

  const sendFromPython = (name: string, args: unknown[]): Promise<PythonOutcome> =>
    runPythonClient('celery_pg_client.py', { name, args, options: { queue: `${ns}.kq` } }, env);

  beforeAll(async () => {
    schema = await withSchema('interop');
    env = { KQ_PG_BROKER: schema.url.replace(/^postgres(ql)?:/, 'sqla+postgresql:'), KQ_PG_BACKEND: BACKEND, KQ_PG_PY_QUEUE: `${ns}.py` };
    app = new App('pginterop', {
      broker: schema.url,
      backend: BACKEND,
      brokerTransportOptions: { pollIntervalMs: 200, logger: { warn: () => undefined } },
      taskDefaultQueue: `${ns}.kq`,
      resultExpires: 600,
    });
    app.task('pg.kq_add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ hostname: `kq@${ns}`, concurrency: 2, logger: new Logger('pginterop', { level: 'critical', sink: () => undefined }) });
    await worker.start();
    pythonWorker = spawn(
      pythonInterpreter,
      ['-m', 'celery', '-A', 'celery_pg_app', 'worker', '-n', `py@${ns}`, '--pool', 'solo', '--without-mingle', '--without-gossip', '--without-heartbeat', '-l', 'warning'],
      { cwd: interopDir, env: { ...process.env, ...env }, stdio: 'ignore' },
    );
  });

  afterAll(async () => {
    pythonWorker?.kill('SIGKILL');
    await worker?.stop({ cold: true });
    await app?.close();
    await schema?.drop();
  });

  it('a task sent by Python runs on a kq worker, and Python reads its result', async () => {
    expect(await sendFromPython('pg.kq_add', [2, 3])).toEqual({ status: 'SUCCESS', result: 5 });
  });

  it('a task sent by kq runs on a Python worker, and kq reads its result', async () => {
    const result = await app.sendTask<number>('pg.py_add', [20, 22], {}, { queue: `${ns}.py` });
    expect(await result.get({ timeout: 30_000 })).toBe(42);
  });
});
