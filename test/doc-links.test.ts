// `pnpm lint:docs` — the check that every relative link and anchor in the tracked Markdown files resolves — run as
// package.json defines it, on a small git repository of its own: it must fail on a missing file or heading, name the
// file, line and link, ignore untracked files, and pass when everything resolves.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const script = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['lint:docs'];

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A git repository with these files (tracked unless listed in `untracked`), inside the repository so remark's plugin resolves. */
function repository(files: Record<string, string>, untracked: readonly string[] = []): string {
  mkdirSync(join(root, '.kq-tmp'), { recursive: true });
  dir = mkdtempSync(join(root, '.kq-tmp', 'doc-links-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  git(dir, 'init', '-q');
  git(dir, 'add', ...Object.keys(files).filter((name) => !untracked.includes(name)));
  return dir;
}

function git(cwd: string, ...args: string[]): void {
  const result = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
}

function lintDocs(cwd: string): { status: number | null; output: string } {
  const env = { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env['PATH'] ?? ''}`, FORCE_COLOR: '0' };
  const result = spawnSync('sh', ['-c', script as string], { cwd, env, encoding: 'utf8', timeout: 60_000 });
  // eslint-disable-next-line no-control-regex
  return { status: result.status, output: `${result.stdout}${result.stderr}`.replace(/\u001b\[[0-9;]*m/g, '') };
}

describe('pnpm lint:docs', () => {
  it('is part of pnpm lint', () => {
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(script).toBeDefined();
    expect(scripts['lint']).toContain('pnpm run lint:docs');
  });

  it('fails on a missing file or heading, naming the file, line and link; untracked files are not read', () => {
    const cwd = repository(
      {
        'a.md': '# A\n\nSee [b](b.md#nope) and [c](c.md).\n',
        'b.md': '# B\n\nBack to [a](a.md#a).\n',
        'scratch.md': '[x](nowhere.md)\n',
      },
      ['scratch.md'],
    );
    const { status, output } = lintDocs(cwd);
    expect(status).not.toBe(0);
    expect(output).toMatch(/a\.md[\s\S]*3:5-3:19\s+warning\s+Cannot find heading for `#nope` in `b\.md`/);
    expect(output).toMatch(/3:24-3:33\s+warning\s+Cannot find file `c\.md`/);
    expect(output).not.toContain('nowhere.md');
  });

  it('passes when every link and anchor resolves', () => {
    const cwd = repository({
      'a.md': '# A\n\n## Section two\n\nSee [b](b.md#b), [below](#section-two) and [the folder](sub).\n',
      'b.md': '# B\n\nBack to [a](a.md#a).\n',
    });
    mkdirSync(join(cwd, 'sub'));
    const { status, output } = lintDocs(cwd);
    expect(output.trim()).toBe('');
    expect(status).toBe(0);
  });
});
