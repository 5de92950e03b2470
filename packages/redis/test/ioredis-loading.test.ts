// @kq/redis takes ioredis with `require`, from its ES module build too: Node 20 lexes every CommonJS file an ES
// module imports (and every file those require) to find its named exports, about 40 ms of CPU at each worker start
// for ioredis, most of it compiling the lexer. Checked by loading the package in a child process whose ES module
// loader logs each bare specifier it resolves.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

describe('loading @kq/redis', () => {
  it('does not import ioredis through the ES module loader', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kq-esm-resolve-'));
    const log = join(dir, 'resolved.txt');
    try {
      await promisify(execFile)(process.execPath, ['--import', 'tsx', '--import', fixture('esm-resolve-log.mjs'), fixture('import-redis-package.ts')], {
        timeout: 30_000,
        env: { ...process.env, KQ_ESM_RESOLVE_LOG: log },
      });
      const resolved = readFileSync(log, 'utf8').split('\n');
      expect(resolved).toContain('@kq/core'); // the log works: the package's own ES imports are in it
      expect(resolved.filter((specifier) => specifier === 'ioredis' || specifier.startsWith('ioredis/'))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 40_000);
});
