import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { compileRunners } from '../src/compile-runners';
import { runnerCommand, SYSTEM_IDS, useCompiledRunners } from '../src/systems';
import type { RunnerSpec } from '../src/protocol';

// Inside bench/, as the real output is, so the bundles' package imports resolve from bench/node_modules.
const dir = mkdtempSync(join(import.meta.dirname, '..', '.runners-test-'));
afterAll(() => {
  useCompiledRunners(null);
  rmSync(dir, { recursive: true, force: true });
});

const spec: RunnerSpec = {
  role: 'drain', broker: 'redis', url: 'redis://127.0.0.1:6379/15', backend: null, queue: 'q', n: 1, mode: 'awaited',
  concurrency: 1, batch: 1, variant: null, timeoutMs: 1000,
};

describe('compiled runners', () => {
  it('bundles every Node runner to plain JavaScript that keeps packages as imports, and runners start from it', async () => {
    await compileRunners(dir);
    const nodeSystems = SYSTEM_IDS.filter((system) => system !== 'python-celery');
    for (const system of nodeSystems) {
      const file = join(dir, `${system}.mjs`);
      expect(existsSync(file), file).toBe(true);
      await promisify(execFile)(process.execPath, ['--check', file]);
    }
    // kq itself is imported, never bundled: the runner measures the built packages users install.
    expect(readFileSync(join(dir, 'kq.mjs'), 'utf8')).toMatch(/from ["']@kq\/worker["']/);

    useCompiledRunners(dir);
    const command = runnerCommand('kq', spec, 'kq drain');
    expect(command.args.at(-1)).toBe(join(dir, 'kq.mjs'));
    expect(command.args).not.toContain('--import');
    useCompiledRunners(null);
    expect(runnerCommand('kq', spec, 'kq drain').args).toContain('--import');
  }, 60_000);
});
