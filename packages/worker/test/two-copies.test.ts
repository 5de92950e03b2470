/**
 * One copy of kq in every process (issue #30): an app outside the repository whose node_modules/@kq/* link to this
 * checkout (a workspace, `npm link`), a JavaScript app module importing `@kq/worker`, and the checkout's `kq` bin,
 * which runs the sources. The app used to get dist/ while the CLI ran src/: periodic tasks never started, mingle ran
 * despite --without-mingle, and task log lines had no trace ids. A second copy that loads anyway is a loud error.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { brokerReachable, brokerUrls } from '@kq/test-harness';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const kqBin = fileURLToPath(new URL('../bin/kq.js', import.meta.url));
// The OpenTelemetry packages @kq/worker itself resolves (devDependencies), so there is one API in the process.
const workerModules = fileURLToPath(new URL('../node_modules', import.meta.url));
const runId = randomUUID().slice(0, 8);

/** A project folder in the system temp dir, as a user's: its node_modules link to this checkout's packages. */
function userProject(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'kq-two-copies-'));
  expect(relative(repoRoot, dir).startsWith('..')).toBe(true);
  mkdirSync(join(dir, 'node_modules', '@kq'), { recursive: true });
  mkdirSync(join(dir, 'node_modules', '@opentelemetry'), { recursive: true });
  for (const name of ['core', 'redis', 'worker']) symlinkSync(join(repoRoot, 'packages', name), join(dir, 'node_modules', '@kq', name), 'dir');
  for (const name of ['api', 'context-async-hooks', 'sdk-trace-base']) {
    symlinkSync(realpathSync(join(workerModules, '@opentelemetry', name)), join(dir, 'node_modules', '@opentelemetry', name), 'dir');
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'kq-two-copies-app', private: true, type: 'module' }));
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  projects.push(dir);
  return dir;
}

const projects: string[] = [];
afterAll(() => {
  for (const dir of projects) rmSync(dir, { recursive: true, force: true });
});

/** Runs the bin in `cwd` until `done(stderr)` or `timeoutMs`, then stops it with SIGTERM (SIGKILL if it lingers). */
function kq(cwd: string, args: string[], done: (stderr: string) => boolean, timeoutMs = 20_000): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [kqBin, ...args], { cwd, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    const stop = (): void => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
    };
    child.stdout.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (done(stderr)) stop();
    });
    const timer = setTimeout(stop, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

function jsonLines(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe.skipIf(!(await brokerReachable('redis')))('the kq bin of a checkout, run for a JavaScript app outside it', () => {
  it('loads one copy: the periodic task runs, --without-mingle holds, task log lines carry trace ids', async () => {
    const task = `twocopies.tick.${runId}`;
    const app = `
      import { App } from '@kq/worker';
      import '@kq/redis'; // the transport the worker loads for itself: the same copy
      import { context, trace } from '@opentelemetry/api';
      import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
      import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';

      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      trace.setGlobalTracerProvider(new BasicTracerProvider());
      const app = new App('twocopies', { broker: '${brokerUrls.redis}/13', taskDefaultQueue: 'twocopies.${runId}' });
      app.periodic('${task}', async (ctx) => { ctx.log.info('tick ran'); }, { every: 1 });
      export default app;
    `;
    const dir = userProject({ 'app.mjs': app });
    const { stderr } = await kq(dir, ['worker', '-A', './app.mjs', '--without-mingle', '--log-format', 'json', '-l', 'info'], (text) => text.includes('"tick ran"'));

    const lines = jsonLines(stderr);
    expect(stderr, stderr).toContain(`Started cycle`);
    const tick = lines.find((line) => line['message'] === 'tick ran');
    expect(tick, stderr).toBeDefined();
    expect(tick).toMatchObject({ task_name: task, trace_id: expect.stringMatching(/^[0-9a-f]{32}$/), span_id: expect.stringMatching(/^[0-9a-f]{16}$/) });
    expect(stderr).not.toContain('mingle');
    expect(stderr).not.toMatch(/loaded twice/);
  });

  it('refuses loudly to run when the app loads a second copy anyway (here a vendored @kq/core)', async () => {
    const dir = userProject({});
    cpSync(join(repoRoot, 'packages', 'core', 'src'), join(dir, 'vendor', 'core', 'src'), { recursive: true });
    // A vendored copy comes with its dependencies.
    mkdirSync(join(dir, 'vendor', 'core', 'node_modules'));
    symlinkSync(realpathSync(join(repoRoot, 'packages', 'core', 'node_modules', 'denque')), join(dir, 'vendor', 'core', 'node_modules', 'denque'));
    const vendored = pathToFileURL(join(dir, 'vendor', 'core', 'src', 'index.ts')).href;
    writeFileSync(
      join(dir, 'app.mjs'),
      `import { App } from '@kq/worker';\nawait import(${JSON.stringify(vendored)});\nexport default new App('twocopies', { broker: '${brokerUrls.redis}/13' });\n`,
    );
    const { code, stderr } = await kq(dir, ['worker', '-A', './app.mjs'], () => false);
    expect(code, stderr).toBe(1);
    const first = join(repoRoot, 'packages', 'core', 'src', 'package-copies.ts');
    const second = join(dir, 'vendor', 'core', 'src', 'package-copies.ts');
    expect(stderr.trim()).toBe(stderr.trim().split('\n')[0]);
    expect(stderr).toContain(`kq: @kq/core is loaded twice in this process, from ${first} and from ${second}`);
  });
});
