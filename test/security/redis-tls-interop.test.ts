/**
 * Python Celery and kq on the same Redis over mutual TLS (a private redis-server): a task sent by Python runs on a kq
 * worker and one sent by kq runs on a Python worker, results both ways, for Debian's Celery 5.2.6 and the modern
 * Celery 5.6 tree. Both sides use the same settings by Celery's names: `broker_use_ssl` and `redis_backend_use_ssl`.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { makeTestCertificates, PrivateRedisServer, pythonAvailable, serverAvailable, type TestCertificates } from '@kq/test-harness';
import { App, Logger, type Worker } from '@kq/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPythonClient, startPythonWorker } from '../../packages/worker/test/fixtures/python-client';

const canRun = (await serverAvailable(['redis-server', '--version'], 'the Redis TLS interop tests (a private redis-server)')) && (await pythonAvailable(['celery', 'redis']));
const CELERY56 = new URL('../../../shared/python/celery56', import.meta.url).pathname;

describe.skipIf(!canRun)('Python Celery and kq on one Redis over mutual TLS', () => {
  const ns = `tlsi${randomUUID().slice(0, 6)}`;
  let certs: TestCertificates;
  let server: PrivateRedisServer;
  let app: App;
  let worker: Worker;
  let python: ChildProcess | undefined;
  let env: Record<string, string>;

  beforeAll(async () => {
    certs = await makeTestCertificates();
    server = new PrivateRedisServer({ tls: { server: certs.server, ca: certs.ca, requireClientCertificate: true } });
    await server.start();
    const ssl = { ssl_cert_reqs: 'CERT_REQUIRED', ssl_ca_certs: certs.ca, ssl_certfile: certs.client.cert, ssl_keyfile: certs.client.key };
    const url = `rediss://127.0.0.1:${server.port}/0`;
    // Celery's redis backend insists on ssl_cert_reqs in a rediss:// URL; the rest comes from redis_backend_use_ssl.
    env = {
      KQ_INTEROP_BROKER: url,
      KQ_INTEROP_BACKEND: `${url}?ssl_cert_reqs=required`,
      KQ_INTEROP_BROKER_USE_SSL: JSON.stringify(ssl),
      KQ_INTEROP_BACKEND_USE_SSL: JSON.stringify(ssl),
      KQ_INTEROP_PY_QUEUE: `${ns}.py`,
      KQ_INTEROP_NAMESPACE: ns,
    };
    app = new App('tls-interop', { broker: url, backend: url, brokerUseSsl: ssl, redisBackendUseSsl: ssl, taskDefaultQueue: `${ns}.kq`, controlExchange: ns, resultExpires: 600 });
    app.task('interop.kq_add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ hostname: `kq@${ns}`, concurrency: 2, logger: new Logger('tls-interop', { level: 'critical', sink: () => undefined }) });
    await worker.start();
    python = startPythonWorker(`py@${ns}`, env);
  });
  afterAll(async () => {
    python?.kill('SIGKILL');
    await worker?.stop({ cold: true });
    await app?.close();
    await server?.stop();
  });

  it('runs a task Python Celery 5.2 sent on the kq worker, and Python reads the result', async () => {
    expect(await runPythonClient('celery_client.py', { name: 'interop.kq_add', args: [2, 3], options: { queue: `${ns}.kq` } }, env)).toMatchObject({ status: 'SUCCESS', result: 5 });
  });

  it('runs a task kq sent on the Python Celery 5.2 worker, and kq reads the result', async () => {
    const result = await app.sendTask<number>('interop.py_add', [20, 22], {}, { queue: `${ns}.py` });
    expect(await result.get({ timeout: 30_000 })).toBe(42);
  }, 40_000);

  it.skipIf(!existsSync(CELERY56))('runs a task Python Celery 5.6 sent on the kq worker', async () => {
    const result = await runPythonClient('celery_client.py', { name: 'interop.kq_add', args: [4, 5], options: { queue: `${ns}.kq` } }, { ...env, PYTHONPATH: CELERY56 });
    expect(result).toMatchObject({ status: 'SUCCESS', result: 9 });
  });
});
