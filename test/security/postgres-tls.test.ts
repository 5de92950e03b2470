/**
 * PostgreSQL over TLS on a private server (`ssl=on`) with certificates made by openssl for the test: the transport
 * and the result backend with libpq's `sslmode=verify-full` and `sslrootcert` in the URL (how Celery's SQLAlchemy URLs
 * carry them) and by the typed tls option; a worker, a client with results, beat (its PostgreSQL lease) and the dashboard
 * over it; and an untrusted, expired or misnamed certificate failing the first attempt with one line naming it.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Connection, KqError, Queue, TlsFailure, type OutgoingMessage } from '@kq/core';
import { brokerReachable, brokerUrls, freePort, makeTestCertificates, pythonAvailable, pythonInterpreter, serverAvailable, type TestCertificates } from '@kq/test-harness';
import { PostgresNode } from '@kq/test-harness/postgres-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dashboard } from '@kq/dashboard';
import { createResultBackend, PostgresResultBackend, PostgresTransport } from '@kq/postgres';
import { App, Beat, Logger } from '@kq/worker';
import { interopDir, runPythonClient } from '../../packages/worker/test/fixtures/python-client';

const canRun = await serverAvailable(['sh', '-c', 'ls /usr/lib/postgresql/*/bin/initdb'], 'PostgreSQL TLS tests (a private server)');
const quiet = { warn: () => undefined };
// Python's side keeps results in the shared Redis (as the PostgreSQL interop test does); the TLS endpoint is the broker.
const python = canRun && (await pythonAvailable(['celery', 'sqlalchemy', 'psycopg2'])) && (await brokerReachable('redis'));
const MODERN_CELERY = ['celery55', 'celery56'].map((tree) => new URL(`../../../shared/python/${tree}`, import.meta.url).pathname);
const PYTHON_BACKEND = 'redis://127.0.0.1:6379/8';
const sharedWithoutTls = canRun && (await brokerReachable('postgres')) && (await sslSetting(brokerUrls.postgres)) === 'off';

async function sslSetting(url: string): Promise<string | undefined> {
  const transport = new PostgresTransport(url, { logger: quiet });
  try {
    await transport.connect();
    return (await transport.postgresStore.pool.query<{ ssl: string }>('SHOW ssl')).rows[0]?.ssl;
  } catch {
    return undefined;
  } finally {
    await transport.close();
  }
}

function message(text: string): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

describe.skipIf(!canRun)('PostgreSQL over TLS (a private server, sslmode=verify-full)', () => {
  let certs: TestCertificates;
  let node: PostgresNode;
  const verifyFull = (ca: string): string => `postgresql://postgres@127.0.0.1:${node.port}/postgres?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`;
  const plainUrl = (): string => `postgresql://postgres@127.0.0.1:${node.port}/postgres`;

  beforeAll(async () => {
    certs = await makeTestCertificates();
    node = new PostgresNode(await freePort(), { tls: { server: certs.server, ca: certs.ca } });
    await node.start();
  }, 60_000);
  afterAll(async () => {
    await node?.destroy();
  }, 30_000);

  it('moves a message and a result over verify-full TLS', async () => {
    const transport = new PostgresTransport(verifyFull(certs.ca), { logger: quiet });
    const backend = new PostgresResultBackend(verifyFull(certs.ca), { logger: quiet });
    try {
      const channel = await transport.createChannel();
      await channel.declareQueue(new Queue('tls'));
      await channel.publish('', 'tls', message('over tls'));
      expect((await channel.get('tls', { noAck: true }))?.body.toString()).toBe('over tls');
      await backend.store({ task_id: 'tls-pg', status: 'SUCCESS', result: 7, traceback: null, children: [], date_done: null });
      expect(await backend.get('tls-pg')).toMatchObject({ status: 'SUCCESS', result: 7 });
    } finally {
      await transport.close();
      await backend.close();
    }
  });

  it("moves a message and a result with the typed tls option (kq's names) and Celery's broker_use_ssl names, on a URL without libpq parameters", async () => {
    const transport = new PostgresTransport(plainUrl(), { logger: quiet, tls: { caFile: certs.ca } });
    const backend = createResultBackend(plainUrl(), { ssl: { ssl_ca_certs: certs.ca, ssl_cert_reqs: 'required' } });
    try {
      expect(transport.describe().ssl).toBe(true);
      const channel = await transport.createChannel();
      await channel.declareQueue(new Queue('tls-typed'));
      await channel.publish('', 'tls-typed', message('typed'));
      expect((await channel.get('tls-typed', { noAck: true }))?.body.toString()).toBe('typed');
      await backend.store({ task_id: 'tls-pg-typed', status: 'SUCCESS', result: 8, traceback: null, children: [], date_done: null });
      expect(await backend.get('tls-pg-typed')).toMatchObject({ status: 'SUCCESS', result: 8 });
    } finally {
      await transport.close();
      await backend.close();
    }
  });

  it('refuses TLS settings libpq cannot carry, and names a missing file, at once', () => {
    expect(() => new PostgresTransport(plainUrl(), { tls: { caFile: certs.ca, minVersion: 'TLSv1.3' } })).toThrow(
      /The PostgreSQL tls option takes caFile, certFile, keyFile, certReqs and checkHostname .*not minVersion/,
    );
    expect(() => new PostgresTransport(plainUrl(), { tls: { caFile: '/nonexistent/ca.pem' } })).toThrow(KqError);
    expect(() => new PostgresTransport(plainUrl(), { tls: { caFile: '/nonexistent/ca.pem' } })).toThrow(/ssl_ca_certs \(caFile\).*\/nonexistent\/ca\.pem/);
  });

  it('runs a worker, a client with results, beat and the dashboard over verify-full TLS', async () => {
    const url = verifyFull(certs.ca);
    const quietLog = new Logger('pg-tls', { level: 'critical', sink: () => undefined });
    const makeApp = (name: string): App => new App(name, { broker: url, backend: url, taskDefaultQueue: 'pg-tls', controlExchange: 'pgtls', eventExchange: 'pgtls.ev' });
    const app = makeApp('pg-tls');
    app.task('pg.add', (_ctx, x: number, y: number) => x + y);
    const worker = app.worker({ hostname: 'kq@pg-tls', concurrency: 2, logger: quietLog, cluster: { taskEvents: true, heartbeatInterval: 0.5, mingle: false, gossip: false } });
    const client = makeApp('pg-tls-client');
    const dashboard = new Dashboard({ app: makeApp('pg-tls-dashboard'), port: 0, logger: quietLog, inspectTimeoutMs: 1000 });
    const beat = new Beat(client, { group: 'pg-tls', schedule: [{ name: 'add', task: 'pg.add', args: [1, 2], every: 0.5 }], loglevel: 'critical' });
    const sent: string[] = [];
    beat.on('sent', (_entry, _tick, id) => sent.push(id));
    try {
      await worker.start();
      expect(await (await client.sendTask<number>('pg.add', [2, 3])).get({ timeout: 15_000 })).toBe(5);
      await beat.start();
      for (let i = 0; i < 200 && sent.length < 1; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(sent.length).toBeGreaterThan(0);
      // The tick the beat sent ran on the worker: its result is there.
      expect(await (await client.asyncResult<number>(sent[0] as string)).get({ timeout: 15_000 })).toBe(3);
      const base = await dashboard.start();
      const workers = (await (await fetch(`${base.replace(/\/$/, '')}/api/workers?refresh=1`)).json()) as Record<string, unknown>;
      expect(Object.keys(workers)).toContain('kq@pg-tls');
    } finally {
      await beat.stop();
      await dashboard.close();
      await dashboard.app.close();
      await worker.stop({ cold: true });
      await client.close();
      await app.close();
    }
  }, 60_000);

  it.skipIf(!python)('shares the verify-full TLS broker with Python Celery on sqla+postgresql://: tasks and results cross both ways (Celery 5.2; 5.5 and 5.6 clients where their trees are present)', async () => {
    const ns = `pgtls${randomUUID().slice(0, 6)}`;
    const url = verifyFull(certs.ca);
    // SQLAlchemy hands the URL's sslmode and sslrootcert to psycopg2, that is to libpq: the same parameters kq reads.
    const env = { KQ_PG_BROKER: url.replace(/^postgresql:/, 'sqla+postgresql:'), KQ_PG_BACKEND: PYTHON_BACKEND, KQ_PG_PY_QUEUE: `${ns}.py` };
    const app = new App('pg-tls-interop', { broker: url, backend: PYTHON_BACKEND, brokerTransportOptions: { pollIntervalMs: 200, logger: quiet }, taskDefaultQueue: `${ns}.kq`, resultExpires: 600 });
    app.task('pg.kq_add', (_ctx, x: number, y: number) => x + y);
    const worker = app.worker({ hostname: `kq@${ns}`, concurrency: 2, logger: new Logger('pg-tls-interop', { level: 'critical', sink: () => undefined }) });
    const pythonWorker = spawn(
      pythonInterpreter,
      ['-m', 'celery', '-A', 'celery_pg_app', 'worker', '-n', `py@${ns}`, '--pool', 'solo', '--without-mingle', '--without-gossip', '--without-heartbeat', '-l', 'warning'],
      { cwd: interopDir, env: { ...process.env, ...env }, stdio: 'ignore' },
    );
    try {
      await worker.start();
      expect(await runPythonClient('celery_pg_client.py', { name: 'pg.kq_add', args: [2, 3], options: { queue: `${ns}.kq` } }, env)).toEqual({ status: 'SUCCESS', result: 5 });
      expect(await (await app.sendTask<number>('pg.py_add', [20, 22], {}, { queue: `${ns}.py` })).get({ timeout: 30_000 })).toBe(42);
      // The modern Celery trees' clients, where they are next to the repository (see docs/celery-suite.md).
      for (const tree of MODERN_CELERY.filter((path) => existsSync(path))) {
        const reply = await runPythonClient('celery_pg_client.py', { name: 'pg.kq_add', args: [4, 5], options: { queue: `${ns}.kq` } }, { ...env, PYTHONPATH: tree });
        expect(reply, tree).toEqual({ status: 'SUCCESS', result: 9 });
      }
    } finally {
      pythonWorker.kill('SIGKILL');
      await worker.stop({ cold: true });
      await app.close();
    }
  }, 60_000);

  // The shared server, when it runs with ssl = off (a private one takes seconds to make).
  it.skipIf(!sharedWithoutTls)('fails the first connect attempt on a server with ssl = off, naming it, instead of retrying', async () => {
    const { failure, retries } = await firstFailure(brokerUrls.postgres, { tls: { caFile: certs.ca } });
    expect(failure).toBeInstanceOf(TlsFailure);
    expect((failure as TlsFailure).code).toBe('SSL_NOT_SUPPORTED');
    expect(retries).toBe(0);
  });

  async function firstFailure(url: string, transportOptions: Record<string, unknown> = {}): Promise<{ failure: unknown; retries: number }> {
    const connection = new Connection(url, {
      transportOptions: { logger: quiet, ...transportOptions },
      connectRetryPolicy: { intervalStart: 50, intervalStep: 0, intervalMax: 50 },
    });
    let retries = 0;
    connection.on('retrying', () => retries++);
    connection.on('error', () => undefined);
    try {
      return { failure: await connection.connect().then(() => undefined, (error: unknown) => error), retries };
    } finally {
      await connection.close();
    }
  }

  const wrong = [
    { name: 'a certificate from a CA the client does not trust', server: () => certs.server, ca: () => certs.otherCa, code: 'SELF_SIGNED_CERT_IN_CHAIN' },
    { name: 'an expired certificate', server: () => certs.expired, ca: () => certs.ca, code: 'CERT_HAS_EXPIRED' },
    { name: 'a certificate for another host', server: () => certs.wrongHost, ca: () => certs.ca, code: 'ERR_TLS_CERT_ALTNAME_INVALID' },
  ];
  for (const { name, server, ca, code } of wrong) {
    it(`fails the first connect attempt on ${name}, with one line naming it (${code}), by URL parameters and by the tls option`, async () => {
      await node.replaceCertificate(server());
      const target = new RegExp(`^TLS connection to postgresql://postgres@127\\.0\\.0\\.1:${node.port}/postgres failed: `);
      try {
        for (const attempt of [() => firstFailure(verifyFull(ca())), () => firstFailure(plainUrl(), { tls: { caFile: ca() } })]) {
          const { failure, retries } = await attempt();
          expect(failure).toBeInstanceOf(TlsFailure);
          expect((failure as TlsFailure).code).toBe(code);
          expect((failure as TlsFailure).message).toMatch(target);
          expect(retries).toBe(0);
        }
        // The result backend names it too.
        const backend = new PostgresResultBackend(plainUrl(), { logger: quiet, tls: { caFile: ca() } });
        try {
          const failure = await backend.get('anything').then(() => undefined, (error: unknown) => error);
          expect(failure).toBeInstanceOf(TlsFailure);
          expect((failure as TlsFailure).message).toMatch(target);
        } finally {
          await backend.close();
        }
      } finally {
        await node.replaceCertificate(certs.server);
      }
    });
  }
});
