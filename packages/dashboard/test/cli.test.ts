// `kq dashboard` as a person runs it: help, a broker that is down (one line, exit 1), a real start, and basic-auth
// credentials from a file or the environment, never from the command line.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const kqBin = fileURLToPath(new URL('../../worker/bin/kq.js', import.meta.url));

function kq(args: string[], until?: (out: string) => boolean, extraEnv: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), NO_COLOR: '1', ...extraEnv };
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
    for (const flag of ['--port', '--address', '--auth-file', '--trust-proxy', '--url-prefix', '--broker']) expect(out).toContain(flag);
    expect(out).not.toContain('--basic-auth');
  });

  it('--basic-auth is refused in one line pointing at --auth-file and KQ_DASHBOARD_AUTH (ps shows the command line)', async () => {
    const { code, out, err } = await kq(['dashboard', '-b', 'redis://127.0.0.1:6390/0', '--basic-auth', 'admin:hunter2']);
    expect(code).toBe(2);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/^kq dashboard: --basic-auth would put passwords on the command line, which ps shows/);
    expect(err).toContain('--auth-file <file>');
    expect(err).toContain('KQ_DASHBOARD_AUTH=user:password');
    expect(out + err).not.toContain('hunter2');
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

  /** Starts `kq dashboard` with these extra arguments and environment, and gives the statuses of /api/workers without and with the pair. */
  const guarded = async (args: string[], env: Record<string, string>): Promise<{ code: number | null; statuses: number[] }> => {
    let asked: Promise<number[]> | undefined;
    let statuses: number[] | undefined;
    const authorization = `Basic ${Buffer.from('admin:hunter2').toString('base64')}`;
    const { code } = await kq(
      ['-b', `${brokerUrls.redis}/7`, 'dashboard', '--port', '0', ...args],
      (text) => {
        const url = /kq dashboard on (http:\/\/\S+)/.exec(text)?.[1];
        asked ??= url ? Promise.all([fetch(`${url}/api/workers`), fetch(`${url}/api/workers`, { headers: { authorization } })]).then((replies) => (statuses = replies.map((reply) => reply.status))) : undefined;
        return statuses !== undefined;
      },
      env,
    );
    return { code, statuses: statuses ?? [] };
  };

  it.skipIf(!redisUp)('--auth-file: a file of user:password lines lets in only its pairs', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kq-dash-auth-')), 'auth');
    writeFileSync(file, 'admin:hunter2\n', { mode: 0o600 });
    expect(await guarded(['--auth-file', file], {})).toEqual({ code: 0, statuses: [401, 200] });
  });

  it.skipIf(!redisUp)('KQ_DASHBOARD_AUTH: the pairs from the environment', async () => {
    expect(await guarded([], { KQ_DASHBOARD_AUTH: 'admin:hunter2' })).toEqual({ code: 0, statuses: [401, 200] });
  });
});
