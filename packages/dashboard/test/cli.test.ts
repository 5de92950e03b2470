// `kq dashboard` as a person runs it: help, a broker that is down (one line, exit 1), and a real start.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const kqBin = fileURLToPath(new URL('../../worker/bin/kq.js', import.meta.url));

function kq(args: string[], until?: (out: string) => boolean): Promise<{ code: number | null; out: string; err: string }> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), NO_COLOR: '1' };
  delete env['KQ_BROKER_URL'];
  delete env['CELERY_BROKER_URL'];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [kqBin, ...args], { cwd: repoRoot, env });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    // The caller says when it has seen enough; then the command is stopped as a person would, with SIGTERM.
    const poll = setInterval(() => {
      if (until?.(out)) {
        clearInterval(poll);
        child.kill('SIGTERM');
      }
    }, 50);
    child.on('close', (code) => {
      clearTimeout(timer);
      clearInterval(poll);
      resolve({ code, out, err });
    });
  });
}

const redisUp = await brokerReachable('redis');

describe('kq dashboard', () => {
  it('--help lists Flower\'s flags and starts nothing', async () => {
    const { code, out } = await kq(['dashboard', '--help']);
    expect(code).toBe(0);
    for (const flag of ['--port', '--address', '--basic-auth', '--broker']) expect(out).toContain(flag);
  });

  it('a broker that is down is one line and exit 1, password hidden', async () => {
    const { code, err } = await kq(['dashboard', '-b', 'redis://:s3cret@127.0.0.1:6390/0', '--port', '0']);
    expect(code).toBe(1);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/^kq dashboard: Cannot connect to/);
    expect(err).not.toContain('s3cret');
  });

  it.skipIf(!redisUp)('starts, answers its health check, and stops on SIGTERM', async () => {
    let health: Promise<number> | undefined;
    let status: number | undefined;
    const { code, out } = await kq(['-b', `${brokerUrls.redis}/7`, 'dashboard', '--port', '0'], (text) => {
      const url = /kq dashboard on (http:\/\/\S+)/.exec(text)?.[1];
      health ??= url ? fetch(`${url}/healthcheck`).then((response) => (status = response.status)) : undefined;
      return status !== undefined;
    });
    expect(out).toMatch(/kq dashboard on http:\/\/127\.0\.0\.1:\d+/);
    expect(status).toBe(200);
    expect(code).toBe(0);
  });
});
