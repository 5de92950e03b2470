/**
 * `kq worker` (and a one-shot command) pointed at a TLS server whose certificate the client cannot trust exits at once
 * with one line naming the cause, instead of logging retries for ever. The CLI runs as a subprocess, as a person runs it.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { makeTestCertificates, PrivateRedisServer, serverAvailable, type TestCertificates } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const canRun = await serverAvailable(['redis-server', '--version'], 'the CLI TLS tests (a private redis-server)');
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const kqCli = fileURLToPath(new URL('../../packages/worker/src/cli/kq.ts', import.meta.url));
const appModule = fileURLToPath(new URL('../../packages/worker/test/fixtures/reliability-app.ts', import.meta.url));

function kq(args: string[]): Promise<{ code: number | null; err: string }> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), NO_COLOR: '1' };
  delete env['KQ_BROKER_URL'];
  delete env['CELERY_BROKER_URL'];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', kqCli, ...args], { cwd: repoRoot, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    // A worker that retried instead would still be running: killed here, it fails the exit-code check.
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, err });
    });
  });
}

describe.skipIf(!canRun)('the kq CLI against a TLS server it cannot trust', () => {
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

  it.each([['worker', '-A', appModule], ['inspect', 'ping']])('kq %s with the wrong CA exits with one line naming the cause', async (...command) => {
    const query = new URLSearchParams({ ssl_cert_reqs: 'required', ssl_ca_certs: certs.otherCa, ssl_certfile: certs.client.cert, ssl_keyfile: certs.client.key });
    const { code, err } = await kq([...command, '-b', `rediss://:s3cret@127.0.0.1:${server.port}/0?${query.toString()}`]);
    expect(code, err).toBe(1);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(
      new RegExp(`^kq: TLS connection to rediss://127\\.0\\.0\\.1:${server.port} failed: the server's certificate is not signed by a CA this client trusts; set ssl_ca_certs`),
    );
    expect(err).not.toContain('s3cret');
  }, 30_000);
});
