import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));

describe('the canvas tour', () => {
  it('runs every canvas form on memory:// and exits', { timeout: 60_000 }, async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: root, timeout: 50_000 });
    expect(stdout).toContain('chain(add(2, 2), add(4), mul(10))         -> 80');
    expect(stdout).toContain('-> [2,4,6]');
    expect(stdout).toContain('chord([add(i, i) for i < 5], total)       -> 20');
    expect(stdout).toContain('total) -> 34');
    expect(stdout).toContain('-> [[2,4],[6,8],[10,12]]');
    expect(stdout).toContain('add_then_double(4) (replaced by a chain)  -> 10');
    expect(stdout).toMatch(/ChordError: Dependency .* raised ValueError\('division by zero'\)/);
  });
});
