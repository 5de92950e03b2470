/**
 * Redis over TLS on private redis-servers (`--tls-port`) with certificates made by openssl for the test: mutual TLS
 * configured by Kombu's URL parameters, by kq's typed option and by Celery's `broker_use_ssl` dict; the result backend
 * too; and the three ways a server certificate is wrong, each failing the first attempt with one line naming it.
 */
import { Connection, Queue, TlsFailure, type OutgoingMessage } from '@kq/core';
import { makeTestCertificates, PrivateRedisServer, serverAvailable, type TestCertificates } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisResultBackend, RedisTransport } from '../src/index';
import { quietLogger } from './helpers/redis-test-env';

const canRun = await serverAvailable(['redis-server', '--version'], 'Redis TLS tests (private redis-servers)');

function message(text: string): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

/** Kombu's rediss:// query for mutual TLS with the test's CA and client certificate. */
function kombuQuery(certs: TestCertificates, ca = certs.ca): string {
  const params = new URLSearchParams({ ssl_cert_reqs: 'required', ssl_ca_certs: ca, ssl_certfile: certs.client.cert, ssl_keyfile: certs.client.key });
  return params.toString();
}

describe.skipIf(!canRun)('Redis over TLS (private servers)', () => {
  let certs: TestCertificates;
  let mutual: PrivateRedisServer;
  let expired: PrivateRedisServer;
  let wrongHost: PrivateRedisServer;
  let plaintext: PrivateRedisServer;

  beforeAll(async () => {
    certs = await makeTestCertificates();
    mutual = new PrivateRedisServer({ tls: { server: certs.server, ca: certs.ca, requireClientCertificate: true } });
    expired = new PrivateRedisServer({ tls: { server: certs.expired, ca: certs.ca } });
    wrongHost = new PrivateRedisServer({ tls: { server: certs.wrongHost, ca: certs.ca } });
    plaintext = new PrivateRedisServer();
    await Promise.all([mutual.start(), expired.start(), wrongHost.start(), plaintext.start()]);
  });
  afterAll(async () => {
    await Promise.all([mutual?.stop(), expired?.stop(), wrongHost?.stop(), plaintext?.stop()]);
  });

  /** The first connect's failure, under a retry policy that would retry for ever: finishing at all shows it was not retried. */
  async function firstFailure(url: string, transportOptions: Record<string, unknown> = {}): Promise<{ failure: unknown; retries: number }> {
    const connection = new Connection(url, {
      transportOptions: { logger: quietLogger, ...transportOptions },
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

  async function roundTrip(transport: RedisTransport, queue: string): Promise<string> {
    try {
      const channel = await transport.createChannel();
      await channel.declareQueue(new Queue(queue));
      await channel.publish('', queue, message(`over tls to ${queue}`));
      const delivery = await channel.get(queue, { noAck: true });
      return delivery?.body.toString() ?? '(nothing)';
    } finally {
      await transport.close();
    }
  }

  it("connects with mutual TLS set by Kombu's rediss:// parameters (ssl_cert_reqs, ssl_ca_certs, ssl_certfile, ssl_keyfile)", async () => {
    const transport = new RedisTransport(`${mutual.url}/0?${kombuQuery(certs)}`, { logger: quietLogger });
    expect(transport.describe().ssl).toBe(true);
    expect(await roundTrip(transport, 'tls-kombu-url')).toBe('over tls to tls-kombu-url');
  });

  it('connects with the typed tls option, which turns TLS on for a redis:// URL', async () => {
    const transport = new RedisTransport(`redis://127.0.0.1:${mutual.port}/0`, {
      logger: quietLogger,
      tls: { caFile: certs.ca, certFile: certs.client.cert, keyFile: certs.client.key },
    });
    expect(await roundTrip(transport, 'tls-typed')).toBe('over tls to tls-typed');
  });

  it("connects with Celery's broker_use_ssl dict given as the transport option ssl (ssl.CERT_REQUIRED as 2)", async () => {
    const { createTransport } = await import('@kq/core');
    const transport = (await createTransport(`rediss://127.0.0.1:${mutual.port}/0`, {
      logger: quietLogger,
      ssl: { ssl_cert_reqs: 2, ssl_ca_certs: certs.ca, ssl_certfile: certs.client.cert, ssl_keyfile: certs.client.key },
    })) as RedisTransport;
    expect(await roundTrip(transport, 'tls-broker-use-ssl')).toBe('over tls to tls-broker-use-ssl');
  });

  it("stores and reads results over TLS (redis_backend_use_ssl's names in the URL)", async () => {
    const backend = new RedisResultBackend(`${mutual.url}/0?${kombuQuery(certs)}`);
    try {
      await backend.store({ task_id: 'tls-result', status: 'SUCCESS', result: 42, traceback: null, children: [], date_done: null });
      expect(await backend.get('tls-result')).toMatchObject({ status: 'SUCCESS', result: 42 });
    } finally {
      await backend.close();
    }
  });

  const refusals = [
    { name: 'none is given', query: () => `ssl_ca_certs=${encodeURIComponent(certs.ca)}` },
    {
      name: "the client's is signed by a CA the server does not trust",
      query: () => new URLSearchParams({ ssl_ca_certs: certs.ca, ssl_certfile: certs.strangerClient.cert, ssl_keyfile: certs.strangerClient.key }).toString(),
    },
  ];
  for (const { name, query } of refusals) {
    it(`fails the first connect attempt when a server requiring client certificates (TLS 1.3) refuses because ${name}`, async () => {
      // Over TLS 1.3 the refusal comes after the client's handshake is done: often just a reset, once an outage.
      const { failure, retries } = await firstFailure(`${mutual.url}/0?${query()}`);
      expect(failure).toBeInstanceOf(TlsFailure);
      // Named from the alert when it arrives (UNKNOWN_CA, CERTIFICATE_REQUIRED), else from the reset after the handshake.
      expect((failure as TlsFailure).message).toMatch(/client('s)? certificate.*ssl_certfile/);
      expect((failure as TlsFailure).message).not.toContain('\n');
      expect(retries).toBe(0);
    });
  }

  it('fails the first connect attempt when a rediss:// URL names a plaintext port, saying it is not a TLS port', async () => {
    // The handshake gets no answer from a plaintext Redis; ioredis alone would wait connectTimeout, then retry for ever.
    const { failure, retries } = await firstFailure(`rediss://127.0.0.1:${plaintext.port}/0?ssl_ca_certs=${encodeURIComponent(certs.ca)}`, {
      redisOptions: { connectTimeout: 120_000 },
    });
    expect(failure).toBeInstanceOf(TlsFailure);
    expect((failure as TlsFailure).code).toBe('ERR_TLS_HANDSHAKE_TIMEOUT');
    expect((failure as TlsFailure).message).toMatch(
      new RegExp(`^TLS connection to rediss://127\\.0\\.0\\.1:${plaintext.port} failed: the server did not answer the TLS handshake, and answers plain Redis on that port: it is not a TLS port`),
    );
    expect(retries).toBe(0);
  });

  const wrong = [
    { name: 'a certificate from a CA the client does not trust', server: () => mutual, ca: () => certs.otherCa, code: 'SELF_SIGNED_CERT_IN_CHAIN', says: /not signed by a CA this client trusts; set ssl_ca_certs/ },
    { name: 'an expired certificate', server: () => expired, ca: () => certs.ca, code: 'CERT_HAS_EXPIRED', says: /certificate has expired; renew it/ },
    { name: 'a certificate for another host', server: () => wrongHost, ca: () => certs.ca, code: 'ERR_TLS_CERT_ALTNAME_INVALID', says: /certificate is for DNS:kq-wrong-host\.invalid, not for 127\.0\.0\.1; connect by a name the certificate lists/ },
  ];
  for (const { name, server, ca, code, says } of wrong) {
    it(`fails the first connect attempt on ${name}, with one line naming it (${code})`, async () => {
      // A policy that would retry for ever: the test finishing at all shows the failure is not retried.
      const connection = new Connection(`${server().url}/0?${kombuQuery(certs, ca())}`, {
        transportOptions: { logger: quietLogger },
        connectRetryPolicy: { intervalStart: 50, intervalStep: 0, intervalMax: 50 },
      });
      let retries = 0;
      connection.on('retrying', () => retries++);
      connection.on('error', () => undefined);
      try {
        const failure = await connection.connect().then(() => undefined, (error: unknown) => error);
        expect(failure).toBeInstanceOf(TlsFailure);
        expect((failure as TlsFailure).code).toBe(code);
        expect((failure as TlsFailure).message).toMatch(says);
        expect((failure as TlsFailure).message).toMatch(new RegExp(`^TLS connection to rediss://127\\.0\\.0\\.1:${server().port} failed: `));
        expect((failure as TlsFailure).message).not.toContain('\n');
        expect(retries).toBe(0);
      } finally {
        await connection.close();
      }
    });
  }

  it('fails a result backend operation on an untrusted certificate with the TLS failure, not "Connection is closed"', async () => {
    const backend = new RedisResultBackend(`${mutual.url}/0?${kombuQuery(certs, certs.otherCa)}`);
    try {
      const failure = await backend.get('anything').then(() => undefined, (error: unknown) => error);
      // The first operation may only see the closed connection; from then on the cause is named.
      const next = failure instanceof TlsFailure ? failure : await backend.get('anything').then(() => undefined, (error: unknown) => error);
      expect(next).toBeInstanceOf(TlsFailure);
    } finally {
      await backend.close();
    }
  });
});
