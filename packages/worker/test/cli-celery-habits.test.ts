/**
 * What a Celery user types on day one works on kq: global options before the command, `--help` and typo suggestions
 * on every command, usage errors as exit 2 with one message, remote-control commands checked before they are sent,
 * and the worker flags Celery has (`--logfile`, `--pidfile`, `--detach`, `-P solo`, `-B`, `--purge`, time limits,
 * `-X`), plus `kq report` and `kq shell`. The CLI runs as a subprocess, as a person runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const kqCli = fileURLToPath(new URL('../src/cli/kq.ts', import.meta.url));
const appModule = fileURLToPath(new URL('./fixtures/cli-habits-app.ts', import.meta.url));

interface Run {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  done: Promise<number | null>;
}

const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function start(args: string[], input?: string | null): Run {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), NO_COLOR: '1' };
  delete env['KQ_BROKER_URL'];
  delete env['CELERY_BROKER_URL'];
  const child = spawn(process.execPath, ['--import', 'tsx', kqCli, ...args], { cwd: repoRoot, env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  running.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  if (typeof input === 'string') child.stdin!.end(input);
  const done = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, out: () => out, err: () => err, done };
}

async function kq(args: string[], input?: string): Promise<{ code: number | null; out: string; err: string }> {
  const run = start(args, input);
  const timer = setTimeout(() => run.child.kill('SIGKILL'), 20_000);
  const code = await run.done;
  clearTimeout(timer);
  return { code, out: run.out(), err: run.err() };
}

async function until(what: string, predicate: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

describe('kq usage as a Celery user types it', () => {
  it('suggests the command meant, and exits 2', async () => {
    const { code, err, out } = await kq(['wokrer']);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toContain("unknown command 'wokrer'");
    expect(err).toContain('Did you mean worker?');
  });

  it('refuses a bad flag value before starting anything, naming the flag', async () => {
    const { code, err } = await kq(['worker', '-A', appModule, '-b', 'memory://habits-bad', '-c', 'zero']);
    expect(code).toBe(2);
    expect(err).toContain("option '-c, --concurrency <n>' argument 'zero' is invalid");
    expect(err).not.toContain('ready');
  });

  it('refuses an unknown remote-control command locally with the list of valid ones (exit 2); `kq control` alone lists them', async () => {
    const typo = await kq(['inspect', 'pnig', '-b', 'redis://127.0.0.1:1/0']);
    expect(typo.code).toBe(2);
    expect(typo.err).toContain('unknown command "pnig"');
    expect(typo.err).toMatch(/^\s+ping\s+Ping worker\(s\)\.$/m);
    const wrongCli = await kq(['inspect', 'revoke', 'x', '-b', 'redis://127.0.0.1:1/0']);
    expect(wrongCli.code).toBe(2); // revoke is a control command, as in Celery
    const list = await kq(['control', '-b', 'redis://127.0.0.1:1/0']);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^\s+rate_limit <task_name> <rate_limit .*>\s+Tell worker\(s\) to modify the rate limit/m);
    expect(list.out).not.toMatch(/^\s+ping\s/m);
  });

  it('kq report prints versions, transport and settings with the password masked, connecting to nothing', async () => {
    const { code, out } = await kq(['report', '-b', 'redis://user:s3cret@127.0.0.1:1/0']);
    expect(code).toBe(0);
    expect(out).toMatch(/software -> kq:\d+\.\d+\.\d+ node:\d+/);
    expect(out).toContain('settings -> transport:redis');
    expect(out).toContain("broker_url: 'redis://user:********@127.0.0.1:1/0'");
    expect(out).not.toContain('s3cret');
  });

  it('kq shell has the app and its tasks in scope, with top-level await', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kq-shell-'));
    const file = join(dir, 'marks');
    const script = [
      'app.name',
      "Object.keys(tasks).join(',')",
      "const w = app.worker({ loglevel: 'error' }); await w.start()",
      `await mark.delay(${JSON.stringify(file)}, 'from-shell')`,
      'await new Promise((resolve) => setTimeout(resolve, 500)); await w.stop()',
      '.exit',
    ];
    // One line per prompt, as a person types: piped all at once, the REPL would reach the end of input mid-await.
    const shell = start(['-A', appModule, 'shell'], null);
    for (const [i, line] of script.entries()) {
      await until(`prompt ${i + 1}`, () => shell.out().split('kq> ').length > i + 1);
      shell.child.stdin!.write(`${line}\n`);
    }
    shell.child.stdin!.end();
    const code = await shell.done;
    const out = shell.out();
    expect(code).toBe(0);
    expect(out).toContain('in scope: app, tasks, mark, sleep');
    expect(out).toContain("'habits'");
    expect(out).toContain("'habits.mark,habits.sleep'");
    expect(lines(file)).toEqual(['from-shell']);
  });
});

describe("the repository's own kq bin", () => {
  it('runs a .ts app module from the repo with one copy of @kq/* (events publish; a built CLI next to tsconfig paths loaded two)', async () => {
    const bin = fileURLToPath(new URL('../bin/kq.js', import.meta.url));
    const quickstart = fileURLToPath(new URL('../../../examples/quickstart/src/tasks.ts', import.meta.url));
    const env: Record<string, string> = { ...(process.env as Record<string, string>), NO_COLOR: '1' };
    const child = spawn(process.execPath, [bin, 'worker', '-A', quickstart, '-b', 'memory://habits-bin', '-E', '-l', 'info', '--heartbeat-interval', '0.2'], { cwd: repoRoot, env });
    running.push(child);
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    await until('the worker to be ready', () => err.includes('ready: queues'));
    await new Promise((resolve) => setTimeout(resolve, 600)); // a few heartbeats
    expect(err).not.toContain('Could not publish event');
    expect(err.match(/mingle: searching/g) ?? []).toHaveLength(err.includes('mingle') ? 1 : 0);
  });
});

describe('kq worker with Celery\'s flags', () => {
  it('--pidfile and --logfile: the pid is written, the log goes to the file, a second worker on the pidfile is refused, and the file goes at exit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kq-pidfile-'));
    const pidfile = join(dir, 'w.pid');
    const logfile = join(dir, 'logs', 'w.log');
    const worker = start(['worker', '-A', appModule, '-b', 'memory://habits-pid', '--pidfile', pidfile, '--logfile', logfile, '-P', 'solo']);
    await until('the worker to be ready', () => lines(logfile).some((line) => line.includes('ready: queues')));
    expect(readFileSync(pidfile, 'utf8').trim()).toBe(String(worker.child.pid));
    expect(lines(logfile).join('\n')).toContain('concurrency 1 (async)'); // -P solo: one at a time, in this process
    expect(worker.err()).toBe('');
    const second = await kq(['worker', '-A', appModule, '-b', 'memory://habits-pid', '--pidfile', pidfile]);
    expect(second.code).toBe(1);
    expect(second.err).toMatch(new RegExp(`^kq: The pidfile .* names process ${worker.child.pid}, which is running`));
    worker.child.kill('SIGTERM');
    expect(await worker.done).toBe(0);
    expect(existsSync(pidfile)).toBe(false);
  });

  it('--detach returns once the background worker has written its pidfile; the worker keeps running', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kq-detach-'));
    const pidfile = join(dir, 'w.pid');
    const logfile = join(dir, 'w.log');
    const { code, out } = await kq(['worker', '-A', appModule, '-b', 'memory://habits-detach', '--detach', '--pidfile', pidfile, '--logfile', logfile]);
    expect(code).toBe(0);
    const pid = Number(readFileSync(pidfile, 'utf8').trim());
    try {
      expect(out).toContain(`kq worker detached: pid ${pid}`);
      expect(() => process.kill(pid, 0)).not.toThrow();
      await until('the detached worker to log that it is ready', () => lines(logfile).some((line) => line.includes('ready: queues')));
    } finally {
      process.kill(pid, 'SIGTERM');
    }
    await until('the detached worker to remove its pidfile', () => !existsSync(pidfile));
  });

  it('--detach with a worker that cannot start says why, from its log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kq-detach-bad-'));
    const { code, err } = await kq(['worker', '-A', join(dir, 'missing.ts'), '-b', 'memory://x', '--detach', '--pidfile', join(dir, 'w.pid'), '--logfile', join(dir, 'w.log')]);
    expect(code).toBe(1);
    expect(err).toContain('The detached worker exited at start');
    expect(err).toContain('Cannot find the app module');
  });

  it('-B runs beat in the worker process: a schedule entry runs there with no other process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kq-embedded-beat-'));
    const marks = join(dir, 'marks');
    const schedule = join(dir, 'beat.yaml');
    writeFileSync(schedule, `entries:\n  tick:\n    task: habits.mark\n    every: 0.5\n    args: [${JSON.stringify(marks)}, tick]\n`);
    const worker = start(['worker', '-A', appModule, '-b', 'memory://habits-beat', '-B', '--schedule', schedule, '-l', 'info']);
    await until('two ticks to run', () => lines(marks).length >= 2);
    expect(worker.err()).toMatch(/beat/i);
  });

  it('--log-format json: every stderr line is one JSON object; task lines carry the task id and name', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kq-json-cli-'));
    const marks = join(dir, 'marks');
    const schedule = join(dir, 'beat.yaml');
    writeFileSync(schedule, `entries:\n  tick:\n    task: habits.mark\n    every: 0.5\n    args: [${JSON.stringify(marks)}, tick]\n`);
    const worker = start(['worker', '-A', appModule, '-b', 'memory://habits-json', '-B', '--schedule', schedule, '--log-format', 'json']);
    await until('a task to succeed', () => worker.err().includes('succeeded in'));
    worker.child.kill('SIGTERM');
    await worker.done;
    const lines = worker.err().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.every((line) => typeof line['time'] === 'string' && typeof line['level'] === 'string' && typeof line['message'] === 'string')).toBe(true);
    const done = lines.find((line) => String(line['message']).includes('succeeded in'));
    expect(done).toMatchObject({ level: 'info', task_name: 'habits.mark' });
    expect(String(done?.['message'])).toContain(`[${String(done?.['task_id'])}]`);
  });

  it('--time-limit applies to every task; --purge drops what waited; -X leaves a queue out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kq-limits-'));
    const marks = join(dir, 'marks');
    const schedule = join(dir, 'beat.yaml');
    // The beat sends a 2 s sleep every second; with a 0.5 s hard limit none of them may finish.
    writeFileSync(schedule, `entries:\n  nap:\n    task: habits.sleep\n    every: 1\n    args: [${JSON.stringify(marks)}, 2]\n`);
    const worker = start(['worker', '-A', appModule, '-b', 'memory://habits-limit', '-B', '--schedule', schedule, '--time-limit', '0.5', '--purge', '-Q', 'celery,other', '-X', 'other']);
    await until('a task to hit the time limit', () => /TimeLimitExceeded|time limit/i.test(worker.err()));
    expect(worker.err()).toContain('purge: erased 0 message(s)');
    expect(worker.err()).toMatch(/ready: queues \[celery\]/);
    // The async pool cannot stop a running promise (see docs/pools.md): the task is failed at its limit, its code runs on.
    expect(worker.err()).toMatch(/habits\.sleep\[[\w-]+\] .*TimeLimitExceeded/);
  });
});
