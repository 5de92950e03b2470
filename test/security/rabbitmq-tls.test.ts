/**
 * RabbitMQ over TLS, on one private node whose TLS listener requires client certificates (mutual TLS), with
 * certificates made by openssl for the test:
 * - the transport: kq's typed option and Celery's `broker_use_ssl` dict (py-amqp's names); a client certificate
 *   missing or untrusted, a server certificate the client cannot trust (another CA, expired, another host name) and a
 *   plaintext port each failing the first attempt with one line naming it; a one-vhost user refused elsewhere, and a
 *   resource its permissions leave out reported as PermissionDenied;
 * - a fleet as that one-vhost user over mutual TLS: a kq worker, a client with rpc:// results, beat, remote control
 *   and the dashboard, with a Python Celery 5.2 worker alongside, all by `broker_use_ssl`.
 * - a certificate that goes bad while a worker runs (the server "rotated" to an expired one): the reconnect's TLS failure
 *   is said once, not retried, and the worker stops on it.
 * One node for all of it: a RabbitMQ node takes seconds to start.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createServer as createTcpServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { AmqpTransport, type AmqpTransportOptions } from '@kq/amqp';
import { Connection, PermissionDenied, Queue, TlsFailure, type OutgoingMessage, type RetryPolicy } from '@kq/core';
import { Dashboard } from '@kq/dashboard';
import { makeTestCertificates, pythonAvailable, serverAvailable, type TestCertificates } from '@kq/test-harness';
import { freeRabbitPorts, RabbitNode } from '@kq/test-harness/rabbit-cluster';
import { App, Beat, Logger, type Worker } from '@kq/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPythonClient, startPythonWorker } from '../../packages/worker/test/fixtures/python-client';

const canRun = await serverAvailable(['which', 'rabbitmq-server'], 'the RabbitMQ TLS tests (a private node)');
const python = canRun && (await pythonAvailable(['celery']));
const MODERN_CELERY = (['5.5', '5.6'] as const).map((version) => [version, new URL(`../../../shared/python/celery${version.replace('.', '')}`, import.meta.url).pathname] as const);
const RETRY_FOR_EVER: RetryPolicy = { intervalStart: 50, intervalStep: 0, intervalMax: 50 };

function message(text: string): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

/** A TCP forwarder whose target can be switched, and whose connections can be dropped: a server that changes under a client. */
class SwitchableForwarder {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  target: { host: string; port: number };
  connections = 0;
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.target = target;
    this.#server = createTcpServer((client) => {
      this.connections++;
      const upstream = tcpConnect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('close', () => this.#sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
  }

  async start(): Promise<this> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    this.port = (this.#server.address() as { port: number }).port;
    return this;
  }

  dropAll(): void {
    for (const socket of this.#sockets) socket.destroy();
  }

  async stop(): Promise<void> {
    this.dropAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

describe.skipIf(!canRun)('RabbitMQ over mutual TLS (a private node)', () => {
  let certs: TestCertificates;
  let node: RabbitNode;

  beforeAll(async () => {
    certs = await makeTestCertificates();
    node = new RabbitNode(await freeRabbitPorts(2), { tls: { server: certs.server, ca: certs.ca, requireClientCertificate: true } });
    await node.start();
  }, 120_000);
  afterAll(async () => {
    await node?.destroy();
  }, 60_000);

  async function roundTrip(url: string, options: AmqpTransportOptions): Promise<string> {
    const transport = new AmqpTransport(url, { connectTimeout: 5000, ...options });
    try {
      const queue = `kqt.tls.${randomUUID().slice(0, 8)}`;
      const channel = await transport.createChannel();
      await channel.declareQueue(new Queue(queue, { autoDelete: true }));
      await channel.publish('', queue, message('over tls'));
      for (let i = 0; i < 50; i++) {
        const delivery = await channel.get(queue, { noAck: true });
        if (delivery) return delivery.body.toString();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return '(nothing)';
    } finally {
      await transport.close();
    }
  }

  it("connects with mutual TLS set by kq's typed option", async () => {
    const options = { tls: { caFile: certs.ca, certFile: certs.client.cert, keyFile: certs.client.key } };
    expect(await roundTrip(node.tlsUrl, options)).toBe('over tls');
  });

  it("connects with Celery's broker_use_ssl dict (py-amqp's ca_certs/certfile/keyfile/cert_reqs) as ssl, on an amqp:// URL", async () => {
    const ssl = { ca_certs: certs.ca, certfile: certs.client.cert, keyfile: certs.client.key, cert_reqs: 'CERT_REQUIRED' };
    expect(await roundTrip(node.tlsUrl.replace('amqps://', 'amqp://'), { ssl } as AmqpTransportOptions)).toBe('over tls');
  });

  const refusals = [
    { name: 'none is given', tls: () => ({ caFile: certs.ca }) },
    { name: "the client's is signed by a CA the server does not trust", tls: () => ({ caFile: certs.ca, certFile: certs.strangerClient.cert, keyFile: certs.strangerClient.key }) },
  ];
  for (const { name, tls } of refusals) {
    it(`fails the first connect attempt when the server, requiring client certificates, refuses because ${name}`, async () => {
      const connection = new Connection(node.tlsUrl, { transportOptions: { tls: tls(), connectTimeout: 5000 }, connectRetryPolicy: RETRY_FOR_EVER });
      let retries = 0;
      connection.on('retrying', () => retries++);
      connection.on('error', () => undefined);
      try {
        const failure = await connection.connect().then(() => undefined, (error: unknown) => error);
        expect(failure).toBeInstanceOf(TlsFailure);
        expect((failure as TlsFailure).message).toMatch(/client('s)? certificate.*ssl_certfile/);
        expect(retries).toBe(0);
      } finally {
        await connection.close();
      }
    });
  }

  const wrong = [
    { name: 'a certificate from a CA the client does not trust', tls: () => ({ caFile: certs.otherCa }), code: 'SELF_SIGNED_CERT_IN_CHAIN', says: /not signed by a CA this client trusts/ },
    {
      name: 'a certificate for another host name',
      tls: () => ({ caFile: certs.ca, servername: 'kq-wrong-host.invalid' }),
      code: 'ERR_TLS_CERT_ALTNAME_INVALID',
      says: /certificate is for IP Address:127\.0\.0\.1, DNS:localhost, not for kq-wrong-host\.invalid/,
    },
  ];
  for (const { name, tls, code, says } of wrong) {
    it(`fails the first connect attempt on ${name}, with one line naming it (${code})`, async () => {
      const connection = new Connection(node.tlsUrl, {
        transportOptions: { tls: { ...tls(), certFile: certs.client.cert, keyFile: certs.client.key }, connectTimeout: 5000 },
        connectRetryPolicy: RETRY_FOR_EVER,
      });
      let retries = 0;
      connection.on('retrying', () => retries++);
      connection.on('error', () => undefined);
      try {
        const failure = await connection.connect().then(() => undefined, (error: unknown) => error);
        expect(failure).toBeInstanceOf(TlsFailure);
        expect((failure as TlsFailure).code).toBe(code);
        expect((failure as TlsFailure).message).toMatch(says);
        expect((failure as TlsFailure).message).toMatch(new RegExp(`^TLS connection to amqps://127\\.0\\.0\\.1:${node.port + 1}/ failed: `));
        expect(retries).toBe(0);
      } finally {
        await connection.close();
      }
    });
  }

  it('fails the first connect attempt on an expired certificate, with one line naming it (CERT_HAS_EXPIRED)', async () => {
    // The handshake fails before any AMQP is spoken, so a TLS server holding the expired certificate stands in for a
    // node configured with it (a node takes seconds to restart with another certificate).
    const expired = createTlsServer({ cert: readFileSync(certs.expired.cert), key: readFileSync(certs.expired.key) }, (socket) => socket.destroy());
    expired.listen(0, '127.0.0.1');
    await once(expired, 'listening');
    const port = (expired.address() as { port: number }).port;
    const connection = new Connection(`amqps://127.0.0.1:${port}/`, {
      transportOptions: { tls: { caFile: certs.ca, certFile: certs.client.cert, keyFile: certs.client.key }, connectTimeout: 5000 },
      connectRetryPolicy: RETRY_FOR_EVER,
    });
    let retries = 0;
    connection.on('retrying', () => retries++);
    connection.on('error', () => undefined);
    try {
      const failure = await connection.connect().then(() => undefined, (error: unknown) => error);
      expect(failure).toBeInstanceOf(TlsFailure);
      expect((failure as TlsFailure).code).toBe('CERT_HAS_EXPIRED');
      expect((failure as TlsFailure).message).toMatch(new RegExp(`^TLS connection to amqps://127\\.0\\.0\\.1:${port}/ failed: the server's certificate has expired; renew it`));
      expect(retries).toBe(0);
    } finally {
      await connection.close();
      expired.close();
    }
  });

  it('fails at once on a plaintext port, naming that the server did not answer in TLS', async () => {
    const connection = new Connection(node.url, {
      transportOptions: { tls: { caFile: certs.ca }, connectTimeout: 5000 },
      connectRetryPolicy: RETRY_FOR_EVER,
    });
    connection.on('error', () => undefined);
    try {
      const failure = await connection.connect().then(() => undefined, (error: unknown) => error);
      expect(failure).toBeInstanceOf(TlsFailure);
      expect((failure as TlsFailure).message).toMatch(/did not answer in TLS \(a plaintext port\?\)/);
    } finally {
      await connection.close();
    }
  });

  it('stops a worker whose reconnect meets a certificate gone bad, with the TlsFailure said once instead of retried for ever', async () => {
    // The node's TLS port behind a forwarder; then the forwarder leads to a server with an expired certificate, and
    // the connection drops: to the worker, the broker came back with its certificate rotated to a bad one.
    const proxy = await new SwitchableForwarder({ host: '127.0.0.1', port: node.port + 1 }).start();
    const rotated = createTlsServer({ cert: readFileSync(certs.expired.cert), key: readFileSync(certs.expired.key) }, (socket) => socket.destroy());
    rotated.listen(0, '127.0.0.1');
    await once(rotated, 'listening');
    const ssl = { ca_certs: certs.ca, certfile: certs.client.cert, keyfile: certs.client.key, cert_reqs: 'CERT_REQUIRED' };
    const queue = `kqt.rotate.${randomUUID().slice(0, 8)}`;
    const app = new App('rabbit-rotate', { broker: `amqps://127.0.0.1:${proxy.port}/`, brokerUseSsl: ssl, taskDefaultQueue: queue, brokerTransportOptions: { connectTimeout: 5000 } });
    const lines: string[] = [];
    const worker = app.worker({
      hostname: `kq@${queue}`,
      concurrency: 1,
      logger: new Logger('rotate', { level: 'warning', sink: (record) => void lines.push(record.message) }),
      enableRemoteControl: false,
      cluster: { taskEvents: false, heartbeatInterval: 0, mingle: false, gossip: false },
    });
    const transportErrors: Error[] = [];
    try {
      await worker.start();
      app.connection.on('error', (error) => transportErrors.push(error));
      const fatal = new Promise<Error>((resolve) => worker.once('fatal', resolve));
      proxy.target = { host: '127.0.0.1', port: (rotated.address() as { port: number }).port };
      proxy.dropAll();
      const failure = await fatal;
      expect(failure).toBeInstanceOf(TlsFailure);
      expect((failure as TlsFailure).code).toBe('CERT_HAS_EXPIRED');
      expect(failure.message).toMatch(new RegExp(`^TLS connection to amqps://127\\.0\\.0\\.1:${proxy.port}/ failed: the server's certificate has expired`));
      expect(lines.some((line) => line.includes('cannot reach the broker until its TLS settings'))).toBe(true);
      // The supervisor gave up at the first TLS failure: one report of it, not one per reconnect attempt.
      expect(transportErrors.filter((error) => error instanceof TlsFailure)).toHaveLength(1);
    } finally {
      await worker.stop({ cold: true }).catch(() => undefined);
      await app.close();
      await proxy.stop();
      rotated.close();
    }
  }, 60_000);

  describe('a user with permissions on one vhost only', () => {
    const vhost = `kq-least-${randomUUID().slice(0, 6)}`;
    beforeAll(async () => {
      await node.ctl('add_vhost', vhost);
      await node.ctl('add_user', 'kq-app', 'kq-secret');
      await node.ctl('set_permissions', '-p', vhost, 'kq-app', '.*', '.*', '.*');
    }, 60_000);

    it('works in its vhost and is refused elsewhere, once, as a permission error', async () => {
      const url = `amqp://kq-app:kq-secret@127.0.0.1:${node.port}/${vhost}`;
      expect(await roundTrip(url, {})).toBe('over tls');
      const elsewhere = new Connection(`amqp://kq-app:kq-secret@127.0.0.1:${node.port}/`, { connectRetryPolicy: RETRY_FOR_EVER });
      elsewhere.on('error', () => undefined);
      try {
        await expect(elsewhere.connect()).rejects.toThrow(/refused to open the vhost .*no permissions on it/);
      } finally {
        await elsewhere.close();
      }
    });

    it('reports a resource its permissions exclude as PermissionDenied naming the operation, not a retry', async () => {
      await node.ctl('set_permissions', '-p', vhost, 'kq-app', '^kq-allowed\\..*', '.*', '.*');
      const transport = new AmqpTransport(`amqp://kq-app:kq-secret@127.0.0.1:${node.port}/${vhost}`, { connectTimeout: 5000 });
      try {
        const channel = await transport.createChannel();
        const failure = await channel.declareQueue(new Queue('kq-forbidden.q')).then(() => undefined, (error: unknown) => error);
        expect(failure).toBeInstanceOf(PermissionDenied);
        expect((failure as PermissionDenied).message).toMatch(/ACCESS_REFUSED.*rabbitmqctl set_permissions/);
      } finally {
        await transport.close();
      }
    });
  });

  describe('a fleet as a one-vhost user', () => {
    const ns = `tlsa${randomUUID().slice(0, 6)}`;
    const vhost = `kq-${ns}`;
    const quiet = new Logger('rabbit-tls', { level: 'critical', sink: () => undefined });
    let url: string;
    let ssl: Record<string, string>;
    let app: App;
    let worker: Worker;
    let pythonWorker: ChildProcess | undefined;
    let env: Record<string, string>;

    const makeApp = (name: string): App =>
      new App(name, { broker: url, backend: 'rpc://', brokerUseSsl: ssl, taskDefaultQueue: `${ns}.kq`, controlExchange: ns, eventExchange: `${ns}.ev`, brokerConnectionMaxRetries: 2 });

    beforeAll(async () => {
      await node.ctl('add_vhost', vhost);
      await node.ctl('add_user', 'kq-fleet', 'kq-secret');
      await node.ctl('set_permissions', '-p', vhost, 'kq-fleet', '.*', '.*', '.*');
      url = `amqps://kq-fleet:kq-secret@127.0.0.1:${node.port + 1}/${vhost}`;
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

    // The modern Celery trees, where they are next to the repository (see docs/celery-suite.md): their client sends
    // over the same mutual-TLS vhost with the same broker_use_ssl, and reads the result kq sent back by rpc://.
    for (const [version, tree] of MODERN_CELERY) {
      it.skipIf(!python || !existsSync(tree))(`runs a task Python Celery ${version} sent over TLS on the kq worker`, async () => {
        const reply = await runPythonClient('celery_client.py', { name: 'interop.kq_add', args: [4, 5], options: { queue: `${ns}.kq` } }, { ...env, PYTHONPATH: tree });
        expect(reply).toMatchObject({ status: 'SUCCESS', result: 9 });
      }, 60_000);
    }
  });
});
