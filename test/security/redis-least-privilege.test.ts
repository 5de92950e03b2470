/**
 * kq under a least-privileged Redis user, over mutual TLS, on a private redis-server: the ACL below (the one
 * docs/security.md gives) grants kq's commands on keys and channels under one prefix and nothing else — no KEYS,
 * FLUSH*, CONFIG or DEBUG. A worker, a client with results, beat, remote control and the dashboard all work under it;
 * a command it refuses is reported once as a PermissionDenied naming the command.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Dashboard } from '@kq/dashboard';
import { Connection, PermissionDenied, Queue } from '@kq/core';
import { RedisTransport } from '@kq/redis';
import { makeTestCertificates, PrivateRedisServer, quietPeriod, serverAvailable, waitFor, type TestCertificates } from '@kq/test-harness';
import { App, Beat, Logger } from '@kq/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const canRun = await serverAvailable(['redis-server', '--version'], 'the Redis least-privilege tests (a private redis-server)');

/** kq's Redis commands, by name: what docs/security.md grants. Keep the two in step. */
export const KQ_REDIS_COMMANDS = [
  // connection set-up and health
  'ping', 'hello', 'auth', 'select', 'client|setname', 'client|getname', 'client|id', 'client|reply', 'info', 'time', 'quit',
  // queues, leases, delayed delivery, bindings, results, beat
  'get', 'set', 'setex', 'del', 'exists', 'expire', 'pexpire', 'pttl', 'incr', 'mget', 'type',
  'lpush', 'rpush', 'lpop', 'rpop', 'lmpop', 'lmove', 'lrem', 'llen', 'lrange', 'brpop',
  'hset', 'hget', 'hdel', 'hgetall', 'hmget', 'hexists', 'hkeys', 'hlen',
  'sadd', 'srem', 'smembers', 'scard',
  'zadd', 'zrem', 'zrange', 'zrangebyscore', 'zrevrangebyscore', 'zscore', 'zmscore', 'zcard',
  'multi', 'exec', 'discard', 'watch', 'unwatch',
  'eval', 'evalsha', 'script|load', 'script|exists',
  // fanout (remote control, events), result notifications
  'publish', 'subscribe', 'unsubscribe', 'psubscribe', 'punsubscribe',
];

/**
 * The ACL line for user `kq`: keys and channels under `prefix`, and (Redis compares a PSUBSCRIBE pattern with the
 * granted ones literally) the exact patterns kq subscribes to: remote control's and the events' fanout channels of
 * database 0 (`celery` is the control exchange, `celeryev` the event exchange).
 */
export function kqAclLine(prefix: string, password: string, commands: readonly string[] = KQ_REDIS_COMMANDS): string {
  const patterns = [`${prefix}*`, `${prefix}/0.celery.pidbox`, `${prefix}/0.celery.pidbox/*`, `${prefix}/0.celeryev/*`];
  return `user kq on >${password} resetkeys ~${prefix}* resetchannels ${patterns.map((pattern) => `&${pattern}`).join(' ')} -@all ${commands.map((command) => `+${command}`).join(' ')}`;
}

describe.skipIf(!canRun)('a least-privileged Redis user over mutual TLS', () => {
  const prefix = 'kqapp:';
  const quiet = new Logger('least-privilege', { level: 'critical', sink: () => undefined });
  let certs: TestCertificates;
  let server: PrivateRedisServer;
  let url: string;

  beforeAll(async () => {
    certs = await makeTestCertificates();
    server = new PrivateRedisServer({
      tls: { server: certs.server, ca: certs.ca, requireClientCertificate: true },
      acl: [
        kqAclLine(prefix, 'kq-secret'),
        ...['zadd', 'brpop'].map((refused) => kqAclLine(prefix, 'kq-secret', KQ_REDIS_COMMANDS.filter((command) => command !== refused)).replace('user kq ', `user kq-no-${refused} `)),
      ],
    });
    await server.start();
    const tls = new URLSearchParams({ ssl_cert_reqs: 'required', ssl_ca_certs: certs.ca, ssl_certfile: certs.client.cert, ssl_keyfile: certs.client.key });
    url = `rediss://kq:kq-secret@127.0.0.1:${server.port}/0?${tls.toString()}`;
  });
  afterAll(async () => {
    await server?.stop();
  });

  function makeApp(name: string, queue: string): App {
    return new App(name, {
      broker: url,
      backend: url,
      brokerTransportOptions: { global_keyprefix: prefix },
      resultBackendTransportOptions: { global_keyprefix: prefix },
      taskDefaultQueue: queue,
      brokerConnectionMaxRetries: 2,
    });
  }

  it('runs a worker, a client with results, beat, remote control and the dashboard', async () => {
    const ns = `lp${randomUUID().slice(0, 6)}`;
    const queue = `${ns}.tasks`;
    const app = makeApp('least-privilege', queue);
    app.task('lp.add', (_ctx, x: number, y: number) => x + y);
    const worker = app.worker({ hostname: `kq@${ns}`, concurrency: 2, logger: quiet, cluster: { taskEvents: true, heartbeatInterval: 0.5, mingle: false, gossip: false } });
    const client = makeApp('least-privilege-client', queue);
    const beat = new Beat(client, { group: ns, schedule: [{ name: 'add', task: 'lp.add', args: [1, 2], every: 0.5 }], loglevel: 'critical' });
    const sent: string[] = [];
    beat.on('sent', (_entry, _tick, id) => sent.push(id));
    const beatErrors: Error[] = [];
    beat.on('error', (error) => beatErrors.push(error));
    const dashboard = new Dashboard({ app: makeApp('least-privilege-dashboard', queue), port: 0, logger: quiet, inspectTimeoutMs: 1000 });
    try {
      await worker.start();
      // a client and its result
      const result = await client.sendTask<number>('lp.add', [2, 3]);
      expect(await result.get({ timeout: 10_000 })).toBe(5);
      // beat: elected, sends ticks, which run
      await beat.start();
      for (let i = 0; i < 200 && sent.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(beatErrors).toEqual([]);
      expect(await (await client.asyncResult<number>(sent[0] as string)).get({ timeout: 10_000 })).toBe(3);
      // remote control
      const pongs = await client.control.ping({ timeout: 2000 });
      expect(pongs.map((reply) => Object.keys(reply)[0])).toContain(`kq@${ns}`);
      // the dashboard sees the worker
      const base = await dashboard.start();
      const workers = (await (await fetch(`${base.replace(/\/$/, '')}/api/workers?refresh=1`)).json()) as Record<string, unknown>;
      expect(Object.keys(workers)).toContain(`kq@${ns}`);
    } finally {
      // Anything refused on the way shows here (ACL LOG), with the command or key or channel.
      expect(await server.cli('ACL', 'LOG', '1')).toBe('');
      await dashboard.close();
      await dashboard.app.close();
      await beat.stop();
      await worker.stop({ cold: true });
      await client.close();
      await app.close();
    }
  }, 60_000);

  it('is the ACL line docs/security.md gives', () => {
    const docs = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8');
    expect(docs).toContain(`\n${kqAclLine(prefix, 'CHANGE-ME')}\n`);
  });

  it('reports a command the ACL refuses as a PermissionDenied naming it, once, not as an outage retried', async () => {
    const refusedUrl = url.replace('kq:kq-secret@', 'kq-no-zadd:kq-secret@');
    const connection = new Connection(refusedUrl, { transportOptions: { global_keyprefix: prefix, logger: { warn: () => undefined } } });
    let retries = 0;
    connection.on('retrying', () => retries++);
    connection.on('error', () => undefined);
    try {
      const channel = await connection.channel();
      // A delayed publish goes to the delayed sorted set with ZADD.
      const failure = await channel
        .publish('', `${prefix}nowhere`, { body: Buffer.from('x'), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} }, { delay: 60_000 })
        .then(() => undefined, (error: unknown) => error);
      expect(failure).toBeInstanceOf(PermissionDenied);
      expect((failure as PermissionDenied).command).toBe('ZADD');
      expect((failure as PermissionDenied).message).toMatch(/^Redis refused ZADD in kq's [\w-]+ script for the user kq connects as: .*Grant it in that user's ACL/);
      expect(retries).toBe(0);
    } finally {
      await connection.close();
    }
  });

  it('stops a consumer whose BRPOP the ACL refuses after saying so once, instead of retrying and logging for ever', async () => {
    const transport = new RedisTransport(url.replace('kq:kq-secret@', 'kq-no-brpop:kq-secret@'), { globalKeyprefix: prefix, logger: { warn: () => undefined }, pollIntervalMs: 100 });
    const errors: unknown[] = [];
    transport.on('error', (error) => errors.push(error));
    try {
      const channel = await transport.createChannel();
      channel.on('error', (error) => errors.push(error));
      await channel.declareQueue(new Queue(`${prefix}idle`));
      await channel.consume({ queues: [`${prefix}idle`], onMessage: () => undefined });
      await waitFor(() => errors.length > 0, 5000, 'the refusal');
      // Long enough for several retries, had the consumer kept trying (its backoff starts at 100 ms).
      await quietPeriod(1500);
      const refusals = errors.filter((error) => error instanceof PermissionDenied);
      expect(refusals).toHaveLength(1);
      expect((refusals[0] as PermissionDenied).command).toBe('BRPOP');
      expect(errors).toHaveLength(1);
    } finally {
      await transport.close();
    }
  });

  it('stops a worker whose consumer the ACL refuses, saying why, rather than leaving it up consuming nothing', async () => {
    const app = new App('least-privilege-fatal', {
      broker: url.replace('kq:kq-secret@', 'kq-no-brpop:kq-secret@'),
      brokerTransportOptions: { global_keyprefix: prefix },
      brokerConnectionMaxRetries: 0,
    });
    const lines: string[] = [];
    const worker = app.worker({ concurrency: 1, logger: new Logger('w', { level: 'info', sink: (record) => lines.push(record.message) }), cluster: { mingle: false, gossip: false } });
    const fatal = new Promise<Error>((resolve) => worker.once('fatal', resolve));
    const stopped = new Promise<void>((resolve) => worker.once('shutdown', resolve));
    try {
      await worker.start();
      const error = await fatal;
      expect(error).toBeInstanceOf(PermissionDenied);
      expect((error as PermissionDenied).command).toBe('BRPOP');
      await stopped;
      expect(lines.some((line) => line.includes('Stopping: this worker cannot consume'))).toBe(true);
    } finally {
      await worker.stop();
      await app.close();
    }
  });
});
