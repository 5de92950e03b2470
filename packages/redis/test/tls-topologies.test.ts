/**
 * TLS through Sentinel and Redis Cluster: the options reach ioredis (the master's TLS by `tls`, as Kombu's
 * broker_use_ssl; the sentinels' by `sentinelTls` or Kombu's `sentinel_kwargs`; every cluster node's by rediss+cluster://),
 * a real TLS sentinel and a real one-node TLS cluster on private servers carry messages, and a wrong CA on either
 * fails the first connect with one line naming the server, as on a single Redis.
 */
import { Connection, Queue, TlsFailure, type OutgoingMessage } from '@kq/core';
import { freePort, makeTestCertificates, PrivateRedisServer, serverAvailable, waitFor, type TestCertificates } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport, parseBrokerUrl, RedisTransport } from '../src/index';
import { quietLogger } from './helpers/redis-test-env';

const canRun = await serverAvailable(['redis-server', '--version'], 'Redis TLS Sentinel and Cluster tests (private redis-servers)');

function message(text: string): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
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

/** The first connect's failure under a retry policy that would retry for ever. */
async function firstFailure(url: string, transportOptions: Record<string, unknown>): Promise<{ failure: unknown; retries: number }> {
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

describe.skipIf(!canRun)('TLS options through Sentinel and Redis Cluster', () => {
  let certs: TestCertificates;
  beforeAll(async () => {
    certs = await makeTestCertificates();
  });

  it('sentinel://: tls reaches the master (enableTLSForSentinelMode), sentinelTls or sentinel_kwargs the sentinels', () => {
    const kq = parseBrokerUrl('sentinel://127.0.0.1:26379', { masterName: 'm', tls: { caFile: certs.ca }, sentinelTls: { caFile: certs.otherCa } });
    expect(kq.connection.enableTLSForSentinelMode).toBe(true);
    expect(String(kq.connection.tls?.ca)).toContain('BEGIN CERTIFICATE');
    expect(kq.connection.sentinelTLS?.ca).not.toEqual(kq.connection.tls?.ca);
    expect(kq.description.ssl).toBe(true);
    const kombu = createTransport('sentinel://127.0.0.1:26379', {
      master_name: 'm',
      broker_use_ssl: { ssl_ca_certs: certs.ca },
      sentinel_kwargs: { ssl: true, ssl_ca_certs: certs.ca },
      logger: quietLogger,
    });
    expect(kombu.describe().ssl).toBe(true);
    // Without TLS options, neither is TLS (Kombu's defaults).
    const plain = parseBrokerUrl('sentinel://127.0.0.1:26379', { masterName: 'm' });
    expect([plain.connection.tls, plain.connection.sentinelTLS, plain.connection.enableTLSForSentinelMode]).toEqual([undefined, undefined, undefined]);
  });

  it('rediss+cluster://: every node connection gets the TLS settings', () => {
    const endpoint = parseBrokerUrl(`rediss+cluster://127.0.0.1:7000,127.0.0.1:7001/?ssl_ca_certs=${encodeURIComponent(certs.ca)}`, {});
    expect(endpoint.cluster?.nodes).toHaveLength(2);
    expect(String(endpoint.connection.tls?.ca)).toContain('BEGIN CERTIFICATE');
    expect(endpoint.description.ssl).toBe(true);
  });

  describe('a TLS sentinel watching a TLS master', () => {
    let master: PrivateRedisServer;
    let sentinel: PrivateRedisServer;
    beforeAll(async () => {
      master = new PrivateRedisServer({ tls: { server: certs.server, ca: certs.ca } });
      await master.start();
      sentinel = new PrivateRedisServer({ tls: { server: certs.server, ca: certs.ca }, sentinelOf: { name: 'kqtls', port: master.port } });
      await sentinel.start();
    });
    afterAll(async () => {
      await Promise.all([sentinel?.stop(), master?.stop()]);
    });

    it('carries messages, both legs over TLS', async () => {
      const transport = new RedisTransport(`sentinel://127.0.0.1:${sentinel.port}/0`, {
        masterName: 'kqtls',
        tls: { caFile: certs.ca },
        sentinelTls: { caFile: certs.ca },
        logger: quietLogger,
      });
      expect(await roundTrip(transport, 'tls-sentinel')).toBe('over tls to tls-sentinel');
    });

    const wrong = [
      { leg: 'the master', options: () => ({ tls: { caFile: certs.otherCa }, sentinelTls: { caFile: certs.ca } }), target: () => `rediss://127.0.0.1:${master.port}` },
      { leg: 'a sentinel', options: () => ({ tls: { caFile: certs.ca }, sentinelTls: { caFile: certs.otherCa } }), target: () => `rediss://127.0.0.1:${sentinel.port} (sentinel)` },
    ];
    for (const { leg, options, target } of wrong) {
      it(`fails the first connect attempt when ${leg} has a certificate from a CA the client does not trust`, async () => {
        const { failure, retries } = await firstFailure(`sentinel://127.0.0.1:${sentinel.port}/0`, { masterName: 'kqtls', ...options() });
        expect(failure).toBeInstanceOf(TlsFailure);
        expect((failure as TlsFailure).code).toBe('SELF_SIGNED_CERT_IN_CHAIN');
        expect((failure as TlsFailure).message.startsWith(`TLS connection to ${target()} failed: `)).toBe(true);
        expect(retries).toBe(0);
      });
    }
  });

  describe('a one-node Redis Cluster over TLS', () => {
    let node: PrivateRedisServer;
    beforeAll(async () => {
      const busPort = await freePort();
      node = new PrivateRedisServer({
        tls: { server: certs.server, ca: certs.ca },
        args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--tls-cluster', 'yes', '--cluster-port', String(busPort), '--cluster-announce-ip', '127.0.0.1'],
      });
      await node.start();
      await node.cli('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
      await waitFor(async () => (await node.cli('CLUSTER', 'INFO')).includes('cluster_state:ok'), 10_000, 'the one-node cluster to serve every slot');
    });
    afterAll(async () => {
      await node?.stop();
    });

    it('carries messages over rediss+cluster://', async () => {
      const transport = new RedisTransport(`rediss+cluster://127.0.0.1:${node.port}/?ssl_ca_certs=${encodeURIComponent(certs.ca)}`, { logger: quietLogger });
      expect(await roundTrip(transport, 'tls-cluster')).toBe('over tls to tls-cluster');
    });

    it('fails the first connect attempt on a certificate from a CA the client does not trust, naming the node', async () => {
      const { failure, retries } = await firstFailure(`rediss+cluster://127.0.0.1:${node.port}/?ssl_ca_certs=${encodeURIComponent(certs.otherCa)}`, {});
      expect(failure).toBeInstanceOf(TlsFailure);
      expect((failure as TlsFailure).code).toBe('SELF_SIGNED_CERT_IN_CHAIN');
      expect((failure as TlsFailure).message.startsWith(`TLS connection to rediss://127.0.0.1:${node.port} failed: `)).toBe(true);
      expect(retries).toBe(0);
    });
  });
});
