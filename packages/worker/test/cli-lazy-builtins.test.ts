/**
 * A `kq` command loads the Node built-ins only the commands that use them need: the REPL (`kq shell`), readline
 * (`kq events`, the yes/no questions) and node:http (a worker's health endpoint) cost every other command — and every
 * worker of a fleet starting at once — their compilation (~15 ms of CPU on the benchmark machine).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const kqCli = fileURLToPath(new URL('../src/cli/kq.ts', import.meta.url));
const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

async function builtinsLoaded(script: string, args: string[]): Promise<Set<string>> {
  const { stderr } = await promisify(execFile)(process.execPath, ['-r', fixture('builtins-loaded.cjs'), '--import', 'tsx', script, ...args], { timeout: 30_000 });
  const line = stderr.split('\n').find((text) => text.startsWith('KQ_BUILTINS '));
  return new Set(JSON.parse(line?.slice('KQ_BUILTINS '.length) ?? '[]') as string[]);
}

describe('the kq CLI', () => {
  it('loads neither the REPL, readline nor node:http for a command that uses none of them', async () => {
    const [tsxAlone, cli] = await Promise.all([builtinsLoaded(fixture('empty-module.ts'), []), builtinsLoaded(kqCli, ['--version'])]);
    const added = [...cli].filter((name) => !tsxAlone.has(name));
    expect(added).toContain('zlib'); // the CLI did load: the codecs' compression is there
    for (const lazy of ['repl', 'readline', 'readline/promises', 'http', '_http_server', 'domain']) expect(added).not.toContain(lazy);
  }, 40_000);
});
