import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// An idle worker should not hold what only some features need (memory, start-up): pino for JSON logs, yaml for
// schedule files, cron-parser for cron entries are loaded when first used (src/platform/lazy-require.ts). In a fresh process,
// since this one has long loaded them all.
describe('optional-feature dependencies', () => {
  it('are not loaded by importing @kq/worker, and are loaded by the feature that needs them', async () => {
    const script = fileURLToPath(new URL('./fixtures/lazy-deps/loaded-deps.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { timeout: 30_000 });
    expect(JSON.parse(stdout.trim())).toEqual({
      imported: [],
      schedule: ['yaml'],
      cron: ['yaml', 'cron-parser'],
      json: ['pino', 'yaml', 'cron-parser'],
    });
  }, 40_000);
});
