/**
 * A new user's first steps off the happy path: --help runs nothing, a stopped broker is one clear line (and a quick
 * exit for one-shot commands, logged retries for a worker), no broker at all is refused rather than a task silently
 * lost in memory://, purge asks, and passwords stay out of the logs. The CLI runs as a subprocess, as a person runs it.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { BrokerUnreachable } from '@kq/core';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const kqCli = fileURLToPath(new URL('../src/cli/kq.ts', import.meta.url));
const appModule = fileURLToPath(new URL('./fixtures/reliability-app.ts', import.meta.url));
const DOWN_REDIS = 'redis://:s3cret@127.0.0.1:6390/0'; // nothing listens on 6390
const DOWN_AMQP = 'amqp://guest:s3cret@127.0.0.1:5690';

function kq(
  args: string[],
  options: { env?: Record<string, string>; untilStderr?: (text: string) => boolean; until?: () => Promise<unknown> | undefined; timeoutMs?: number } = {},
): Promise<{ code: number | null; out: string; err: string; ms: number }> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), NO_COLOR: '1', ...options.env };
  delete env['KQ_BROKER_URL'];
  delete env['CELERY_BROKER_URL'];
  Object.assign(env, options.env);
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', kqCli, ...args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let stopWhen: Promise<void> | undefined;
    const stop = (): void => void child.kill('SIGKILL');
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      if (options.untilStderr?.(err)) child.kill('SIGKILL');
      const until = stopWhen === undefined ? options.until?.() : undefined;
      if (until) stopWhen = until.then(stop, stop);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err, ms: Date.now() - started });
    });
  });
}

describe('the kq CLI off the happy path', () => {
  it.each(['worker', 'purge', 'call', 'inspect', 'control', 'events', 'beat', 'dlq', 'result', 'status'])('kq %s --help prints usage and runs nothing', async (command) => {
    const { code, out } = await kq([command, '--help'], { env: { KQ_BROKER_URL: DOWN_REDIS } });
    expect(code).toBe(0);
    expect(out).toContain(`kq ${command}`);
  });

  it('kq --version prints the version', async () => {
    const { code, out } = await kq(['--version']);
    expect(code).toBe(0);
    expect(out).toMatch(/^kq \d+\.\d+\.\d+/);
  });

  it('refuses to send a task into memory:// when no broker is configured, saying how to set one', async () => {
    const { code, err, out } = await kq(['call', 'proj.add', '--args', '[1, 2]']);
    expect(code).toBe(1);
    expect(out).toBe(''); // no task id printed for a task that would have been lost
    expect(err).toMatch(/^kq: No broker is configured: pass -b redis:\/\//);
    expect(err.trim().split('\n')).toHaveLength(1);
  });

  it.each([DOWN_REDIS, DOWN_AMQP])('one-shot commands fail fast on a stopped broker (%s) with one line, password hidden', async (url) => {
    for (const args of [['call', 'proj.add'], ['inspect', 'ping'], ['purge', '-f']]) {
      const { code, err } = await kq([...args, '-b', url]);
      expect(code, `${args.join(' ')}: ${err}`).toBe(1);
      expect(err).toMatch(/^kq: Cannot connect to .*127\.0\.0\.1.*Is the broker running there\?/);
      expect(err).not.toContain('s3cret');
      expect(err.trim().split('\n')).toHaveLength(1);
    }
  });

  it('a worker on a stopped broker logs every retry with the reason, as Celery does (password hidden)', async () => {
    const { err } = await kq(['worker', '-A', appModule, '-b', DOWN_REDIS], { untilStderr: (text) => (text.match(/Trying again/g) ?? []).length >= 2, timeoutMs: 15_000 });
    expect(err).toMatch(/Cannot connect to redis:\/\/:\*\*@127\.0\.0\.1:6390\/0: .*Trying again in \d+\.\d\d seconds\.\.\. \(1\/100\)/);
    expect(err).toMatch(/\(2\/100\)/);
    expect(err).not.toContain('s3cret');
  });

  it('kq worker --http-port serves /readyz once it consumes', async () => {
    const free = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    let ready: Promise<number> | undefined;
    const { err } = await kq(['worker', '-A', appModule, '-b', 'memory://cli-http', '--http-port', String(free), '-l', 'info'], {
      untilStderr: (text) => {
        if (!text.includes('ready: queues') || ready !== undefined) return false;
        ready = fetch(`http://127.0.0.1:${free}/readyz`).then((response) => response.status);
        return false;
      },
      // The worker keeps running: it is stopped once /readyz has answered (or after the timeout).
      until: () => ready,
      timeoutMs: 15_000,
    });
    expect(err).toContain(`http endpoint on http://127.0.0.1:${free}`);
    expect(await ready).toBe(200);
  });

  it('kq purge without -f and no terminal to ask on refuses instead of deleting', async () => {
    const { code, err } = await kq(['purge', '-b', 'memory://']);
    expect(code).toBe(1);
    expect(err).toContain('add -f to confirm');
  });

  it('accepts options before the command, as celery -A proj worker does', async () => {
    const { code, out } = await kq(['-A', appModule, 'worker', '--help']);
    expect(code).toBe(0);
    expect(out).toContain('kq worker');
  });
});

describe('sending to a stopped broker from the API', () => {
  it.each([DOWN_REDIS, DOWN_AMQP])('task.delay() rejects with BrokerUnreachable after its publish retry policy (%s)', async (url) => {
    const app = new App('down', { broker: url, taskPublishRetryPolicy: { maxRetries: 2, intervalStart: 0, intervalStep: 100, intervalMax: 200 } });
    const add = app.task('down.add', (_ctx, x: number, y: number) => x + y);
    try {
      const error = await add.delay(1, 2).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(BrokerUnreachable);
      expect((error as Error).message).not.toContain('s3cret');
    } finally {
      await app.close();
    }
  });
});
