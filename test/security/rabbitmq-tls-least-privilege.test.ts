/**
 * A fleet on RabbitMQ over mutual TLS, as a user with permissions on one vhost only, on a private node: a kq worker, a
 * client with rpc:// results, beat, remote control and the dashboard, with a Python Celery 5.2 worker alongside (a
 * task sent by Python runs on kq and one sent by kq runs on Python). Everything connects by Celery's `broker_use_ssl`
 * (py-amqp's names).
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Dashboard } from '@kq/dashboard';
import { makeTestCertificates, pythonAvailable, serverAvailable, type TestCertificates } from '@kq/test-harness';
import { freeRabbitPorts, RabbitNode } from '@kq/test-harness/rabbit-cluster';
import { App, Beat, Logger, type Worker } from '@kq/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPythonClient, startPythonWorker } from '../../packages/worker/test/fixtures/python-client';

const canRun = await serverAvailable(['which', 'rabbitmq-server'], 'the RabbitMQ TLS fleet test (a private node)');
const python = canRun && (await pythonAvailable(['celery']));

describe.skipIf(!canRun)('a fleet on RabbitMQ over mutual TLS, as a one-vhost user', () => {
  const ns = `tlsa${randomUUID().slice(0, 6)}`;
  const vhost = `kq-${ns}`;
  const quiet = new Logger('rabbit-tls', { level: 'critical', sink: () => undefined });
  let certs: TestCertificates;
  let node: RabbitNode;
  let url: string;
  let ssl: Record<string, string>;
  let app: App;
  let worker: Worker;
  let pythonWorker: ChildProcess | undefined;
  let env: Record<string, string>;

  const makeApp = (name: string): App =>
    new App(name, { broker: url, backend: 'rpc://', brokerUseSsl: ssl, taskDefaultQueue: `${ns}.kq`, controlExchange: ns, eventExchange: `${ns}.ev`, brokerConnectionMaxRetries: 2 });

  beforeAll(async () => {
    certs = await makeTestCertificates();
    node = new RabbitNode(await freeRabbitPorts(2), { tls: { server: certs.server, ca: certs.ca, requireClientCertificate: true } });
    await node.start();
    await node.ctl('add_vhost', vhost);
    await node.ctl('add_user', 'kq-app', 'kq-secret');
    await node.ctl('set_permissions', '-p', vhost, 'kq-app', '.*', '.*', '.*');
    url = `amqps://kq-app:kq-secret@127.0.0.1:${node.port + 1}/${vhost}`;
    ssl = { ca_certs: certs.ca, certfile: certs.client.cert, keyfile: certs.client.key, cert_reqs: 'CERT_REQUIRED' };
    env = {
      KQ_INTEROP_BROKER: url,
      KQ_INTEROP_BACKEND: 'rpc://',
      KQ_INTEROP_BROKER_USE_SSL: JSON.stringify(ssl),
      KQ_INTEROP_PY_QUEUE: `${ns}.py`,
      KQ_INTEROP_NAMESPACE: ns,
    };
    app = makeApp('rabbit-tls');
    app.task('interop.kq_add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ hostname: `kq@${ns}`, concurrency: 2, logger: quiet, cluster: { taskEvents: true, heartbeatInterval: 0.5, mingle: false, gossip: false } });
    await worker.start();
    if (python) pythonWorker = startPythonWorker(`py@${ns}`, env);
  }, 120_000);
  afterAll(async () => {
    pythonWorker?.kill('SIGKILL');
    await worker?.stop({ cold: true });
    await app?.close();
    await node?.destroy();
  }, 60_000);

  it('runs a client with results, beat, remote control and the dashboard', async () => {
    const client = makeApp('rabbit-tls-client');
    const beat = new Beat(client, { group: ns, schedule: [{ name: 'add', task: 'interop.kq_add', args: [1, 2], every: 0.5 }], loglevel: 'critical' });
    const sent: string[] = [];
    beat.on('sent', (_entry, _tick, id) => sent.push(id));
    const dashboard = new Dashboard({ app: makeApp('rabbit-tls-dashboard'), port: 0, logger: quiet, inspectTimeoutMs: 1000 });
    try {
      expect(await (await client.sendTask<number>('interop.kq_add', [2, 3])).get({ timeout: 10_000 })).toBe(5);
      await beat.start();
      for (let i = 0; i < 200 && sent.length < 1; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(sent.length).toBeGreaterThan(0);
      const pongs = await client.control.ping({ timeout: 2000 });
      expect(pongs.map((reply) => Object.keys(reply)[0])).toContain(`kq@${ns}`);
      const base = await dashboard.start();
      const workers = (await (await fetch(`${base.replace(/\/$/, '')}/api/workers?refresh=1`)).json()) as Record<string, unknown>;
      expect(Object.keys(workers)).toContain(`kq@${ns}`);
    } finally {
      await dashboard.close();
      await dashboard.app.close();
      await beat.stop();
      await client.close();
    }
  }, 60_000);

  it.skipIf(!python)('runs a task Python Celery sent over TLS on the kq worker, and one kq sent on the Python worker', async () => {
    expect(await runPythonClient('celery_client.py', { name: 'interop.kq_add', args: [2, 3], options: { queue: `${ns}.kq` } }, env)).toMatchObject({ status: 'SUCCESS', result: 5 });
    const result = await app.sendTask<number>('interop.py_add', [20, 22], {}, { queue: `${ns}.py` });
    expect(await result.get({ timeout: 30_000 })).toBe(42);
  }, 60_000);
});
