import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@kq/test-harness';

const here = dirname(fileURLToPath(import.meta.url));
const repositoryRoot = join(here, '..', '..', '..');
const kq = join(here, '..', 'src', 'cli', 'kq.ts');

interface Run {
  output: () => string;
  exited: Promise<number | null>;
  stop: () => void;
}

function runKq(args: string[]): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', kq, ...args], {
    cwd: repositoryRoot,
    env: { ...process.env, TSX_TSCONFIG_PATH: join(repositoryRoot, 'tsconfig.json'), NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    output: () => output,
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
    stop: () => child.kill('SIGTERM'),
  };
}

describe('kq beat', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kq-beat-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('sends the schedule of a YAML file and of the app module, and stops on SIGTERM', async () => {
    const file = join(dir, 'beat.yaml');
    await writeFile(file, ['entries:', '  from-file:', '    task: proj.file', '    every: 0.2', '    args: [1]'].join('\n'));
    const run = runKq(['beat', '-A', join(here, 'fixtures', 'beat', 'beat-app.ts'), '-b', 'memory://', '--schedule', file, '--loglevel', 'info']);
    try {
      await waitFor(() => /Sent proj\.file\[/.test(run.output()) && /Sent proj\.module\[/.test(run.output()), 20_000, () => `both entries sent:\n${run.output()}`);
      expect(run.output()).toMatch(/Leader of schedule beat-cli \(epoch 1\)/);
    } finally {
      run.stop();
    }
    expect(await run.exited).toBe(0);
    expect(run.output()).toMatch(/beat for schedule beat-cli stopped/);
  }, 30_000);

  it('refuses to start without a schedule, or with a broken one, saying why', async () => {
    const none = runKq(['beat', '-b', 'memory://']);
    expect(await none.exited).toBe(1);
    expect(none.output()).toMatch(/kq beat has no schedule/);
    const file = join(dir, 'broken.json');
    await writeFile(file, JSON.stringify({ entries: [{ name: 'x', task: 'proj.x', cron: 'not a cron' }] }));
    const broken = runKq(['beat', '-b', 'memory://', '--schedule', file]);
    expect(await broken.exited).toBe(1);
    expect(broken.output()).toMatch(/cannot read the cron expression "not a cron"/);
  }, 30_000);
});
