/**
 * A Redis server's certificate goes bad under a running worker (rotated to an expired one with CONFIG SET, and the
 * connections dropped): the worker's reconnect fails on TLS, and the worker says so once as a TlsFailure and stops
 * (kq worker exits 1), where it went on retrying "Connection is closed" for ever.
 */
import { randomUUID } from 'node:crypto';
import { TlsFailure } from '@kq/core';
import { makeTestCertificates, PrivateRedisServer, serverAvailable, type TestCertificates } from '@kq/test-harness';
import { App, Logger } from '@kq/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const canRun = await serverAvailable(['redis-server', '--version'], 'the Redis TLS rotation test (a private redis-server)');

describe.skipIf(!canRun)('a Redis certificate that goes bad under a running worker', () => {
  let certs: TestCertificates;
  let server: PrivateRedisServer;
  beforeAll(async () => {
    certs = await makeTestCertificates();
    server = new PrivateRedisServer({ tls: { server: certs.server, ca: certs.ca, requireClientCertificate: true } });
    await server.start();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('stops the worker with the TlsFailure of its reconnect, said once', async () => {
    const ssl = { ssl_cert_reqs: 'required', ssl_ca_certs: certs.ca, ssl_certfile: certs.client.cert, ssl_keyfile: certs.client.key };
    const queue = `rotate.${randomUUID().slice(0, 8)}`;
    const app = new App('redis-rotate', { broker: `rediss://127.0.0.1:${server.port}/0`, brokerUseSsl: ssl, taskDefaultQueue: queue, brokerTransportOptions: { logger: { warn: () => undefined } } });
    const lines: string[] = [];
    const worker = app.worker({
      hostname: `kq@${queue}`,
      concurrency: 1,
      logger: new Logger('rotate', { level: 'warning', sink: (record) => void lines.push(record.message) }),
      enableRemoteControl: false,
      cluster: { taskEvents: false, heartbeatInterval: 0, mingle: false, gossip: false },
    });
    try {
      await worker.start();
      const fatal = new Promise<Error>((resolve) => worker.once('fatal', resolve));
      await server.cli('CONFIG', 'SET', 'tls-cert-file', certs.expired.cert, 'tls-key-file', certs.expired.key);
      await server.cli('CLIENT', 'KILL', 'TYPE', 'normal');
      const failure = await fatal;
      expect(failure).toBeInstanceOf(TlsFailure);
      expect((failure as TlsFailure).code).toBe('CERT_HAS_EXPIRED');
      expect(failure.message).toMatch(new RegExp(`^TLS connection to rediss://127\\.0\\.0\\.1:${server.port} failed: the server's certificate has expired`));
      expect(lines.filter((line) => line.includes('cannot reach the broker until its TLS settings'))).toHaveLength(1);
    } finally {
      await worker.stop({ cold: true }).catch(() => undefined);
      await app.close();
    }
  });
});
