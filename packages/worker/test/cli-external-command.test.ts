/**
 * `kq <name>` for a name kq does not know runs the `kq-<name>` program, as git runs `git-<name>`: found in
 * node_modules/.bin as npm finds bins, with the rest of the line, stdin/stdout/stderr, SIGINT and SIGTERM passed on,
 * and its exit code. This is how `kq dashboard` reaches @kq/dashboard's `kq-dashboard` without kq importing it.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findExternalCommand, missingCommandHint } from '../src/cli/external-command';

const kqBin = fileURLToPath(new URL('../bin/kq.js', import.meta.url));

/** A project whose node_modules/.bin has `kq-probe`: it reports its arguments and stdin, and how it was stopped. */
function projectWithProbe(): string {
  const project = mkdtempSync(join(tmpdir(), 'kq-external-'));
  const bin = join(project, 'node_modules', '.bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(
    join(bin, 'kq-probe'),
    `#!/usr/bin/env node
if (process.argv.includes('--wait')) {
  process.on('SIGTERM', () => { console.log('stopped by SIGTERM'); process.exit(0); });
  process.on('SIGINT', () => { console.log('stopped by SIGINT'); process.exit(3); });
  setInterval(() => undefined, 1000);
  console.log('ready');
} else {
  let input = '';
  process.stdin.on('data', (chunk) => (input += chunk));
  process.stdin.on('end', () => {
    console.log(JSON.stringify({ args: process.argv.slice(2), input }));
    console.error('probe on stderr');
    process.exitCode = 7;
  });
}
`,
  );
  chmodSync(join(bin, 'kq-probe'), 0o755);
  return project;
}

function kq(cwd: string, args: string[], options: { input?: string; signalWhen?: { text: string; signal: NodeJS.Signals } } = {}): Promise<{ code: number | null; out: string; err: string }> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), NO_COLOR: '1' };
  delete env['KQ_BROKER_URL'];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [kqBin, ...args], { cwd, env });
    let out = '';
    let err = '';
    let signalled = false;
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (options.signalWhen && !signalled && out.includes(options.signalWhen.text)) {
        signalled = true;
        child.kill(options.signalWhen.signal);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.stdin.end(options.input ?? '');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

describe('kq <name> runs kq-<name>', () => {
  const project = projectWithProbe();

  it('with the rest of the line (global options too), stdin, stdout, stderr and its exit code', async () => {
    const { code, out, err } = await kq(project, ['-b', 'memory://', 'probe', '--flag', 'x'], { input: 'hello' });
    expect(JSON.parse(out)).toEqual({ args: ['-b', 'memory://', '--flag', 'x'], input: 'hello' });
    expect(err).toBe('probe on stderr\n');
    expect(code).toBe(7);
  });

  it.each([
    ['SIGTERM', 0],
    ['SIGINT', 3],
  ] as const)('passes %s on to the program and exits with its code', async (signal, expected) => {
    const { code, out } = await kq(project, ['probe', '--wait'], { signalWhen: { text: 'ready', signal } });
    expect(out).toContain(`stopped by ${signal}`);
    expect(code).toBe(expected);
  });

  it('kq --help lists the programs found, and the optional kq packages', async () => {
    const { code, out } = await kq(project, ['--help']);
    expect(code).toBe(0);
    expect(out).toMatch(/^ {2}probe +Runs the kq-probe program\.$/m);
    expect(out).toMatch(/^ {2}dashboard +Run the dashboard/m);
  });

  it('a missing optional package is one line saying what to install; other names are left to the usage error', () => {
    const empty = [mkdtempSync(join(tmpdir(), 'kq-external-none-'))];
    expect(findExternalCommand('dashboard', empty)).toBeUndefined();
    expect(findExternalCommand('probe', [join(project, 'node_modules', '.bin')])).toBe(join(project, 'node_modules', '.bin', 'kq-probe'));
    expect(missingCommandHint('dashboard')).toMatch(/^kq dashboard needs the @kq\/dashboard package, which is not installed\. Run: \S+ (add|install) @kq\/dashboard$/);
    expect(missingCommandHint('probe')).toBeUndefined();
  });
});
