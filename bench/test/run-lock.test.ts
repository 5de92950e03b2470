import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireRunLock } from '../src/run-lock';

describe('acquireRunLock', () => {
  const file = (): string => join(mkdtempSync(join(tmpdir(), 'kqbench-lock-')), 'lock');

  it('lets one benchmark in and tells a second who holds the lock', () => {
    const path = file();
    const lock = acquireRunLock('pnpm bench', path);
    expect(() => acquireRunLock('pnpm bench:smoke', path)).toThrow(new RegExp(`Another benchmark is running \\(pid ${process.pid}, pnpm bench`));
    lock.release();
    acquireRunLock('pnpm bench:smoke', path).release();
  });

  it('takes over a lock whose process is gone', () => {
    const path = file();
    writeFileSync(path, JSON.stringify({ pid: 2 ** 22 + 12345, started: 'earlier', what: 'pnpm bench' }));
    acquireRunLock('pnpm bench', path).release();
  });
});
