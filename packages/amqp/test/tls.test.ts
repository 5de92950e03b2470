/**
 * RabbitMQ over TLS on a private node with a TLS listener that requires client certificates (mutual TLS), with
 * certificates made by openssl for the test: kq's typed option, Celery's `broker_use_ssl` dict (py-amqp's names), a
 * client without a certificate refused, and a server certificate the client cannot trust (another CA, another host
 * name) failing the first attempt with one line naming it. The same node holds a vhost a least-privileged user may
 * use and nothing else.
 */
import { randomUUID } from 'node:crypto';
import { Connection, PermissionDenied, Queue, TlsFailure, type RetryPolicy } from '@kq/core';
import { makeTestCertificates, serverAvailable, type TestCertificates } from '@kq/test-harness';
import { freeRabbitPorts, RabbitNode } from '@kq/test-harness/rabbit-cluster';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmqpTransport, type AmqpTransportOptions } from '../src/index';
import { message } from './helpers';

const canRun = await serverAvailable(['which', 'rabbitmq-server'], 'RabbitMQ TLS tests (a private node)');
const NODE_START_MS = 120_000;
const RETRY_FOR_EVER: RetryPolicy = { intervalStart: 50, intervalStep: 0, intervalMax: 50 };

describe.skipIf(!canRun)('RabbitMQ over TLS (a private node, mutual TLS)', () => {
  let certs: TestCertificates;
  let node: RabbitNode;

  beforeAll(async () => {
    certs = await makeTestCertificates();
    node = new RabbitNode(await freeRabbitPorts(2), { tls: { server: certs.server, ca: certs.ca, requireClientCertificate: true } });
    await node.start();
  }, NODE_START_MS);
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

  it('is refused by a server that requires a client certificate when none is given', async () => {
    const connection = new Connection(node.tlsUrl, {
      transportOptions: { tls: { caFile: certs.ca }, connectTimeout: 5000 },
      connectRetryPolicy: { maxRetries: 1, intervalStart: 10, intervalStep: 0, intervalMax: 10 },
    });
    connection.on('error', () => undefined);
    try {
      await expect(connection.connect()).rejects.toThrow();
    } finally {
      await connection.close();
    }
  });

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
});
