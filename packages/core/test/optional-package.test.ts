// importOptionalPackage: a package @kq/core cannot see (pnpm's strict layout) is loaded as the application sees it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importOptionalPackage, isModuleNotFound } from '../src/optional-package';

const app = mkdtempSync(join(tmpdir(), 'kq-optional-'));

function install(name: string, manifest: Record<string, unknown>, files: Record<string, string>): void {
  const directory = join(app, 'node_modules', ...name.split('/'));
  mkdirSync(join(directory, 'dist'), { recursive: true });
  writeFileSync(join(directory, 'package.json'), JSON.stringify({ name, ...manifest }));
  for (const [file, text] of Object.entries(files)) writeFileSync(join(directory, file), text);
}

install(
  '@kq-test/exports-manifest',
  {
    type: 'module',
    exports: { '.': { import: { default: './dist/index.js' }, require: './dist/index.cjs' }, './package.json': './package.json' },
  },
  { 'dist/index.js': 'export const kind = "esm";', 'dist/index.cjs': 'exports.kind = "cjs";' },
);
install(
  '@kq-test/source-condition',
  { type: 'module', exports: { '.': { 'kq-source': './src/index.mjs', import: './dist/index.js' }, './package.json': './package.json' } },
  { 'dist/index.js': 'export const kind = "dist";' },
);
mkdirSync(join(app, 'node_modules', '@kq-test', 'source-condition', 'src'));
writeFileSync(join(app, 'node_modules', '@kq-test', 'source-condition', 'src', 'index.mjs'), 'export const kind = "sources";');
install('@kq-test/hidden-manifest', { type: 'module', exports: { '.': './dist/main.js' } }, { 'dist/main.js': 'export const kind = "hidden";' });
install('@kq-test/hidden-cjs-main', { main: './dist/main.cjs', module: './dist/main.mjs' }, {
  'dist/main.cjs': 'exports.kind = "cjs";',
  'dist/main.mjs': 'export const kind = "module field";',
});

afterAll(() => rmSync(app, { recursive: true, force: true }));

describe('importOptionalPackage', () => {
  it('loads a package only the application can see, through its ESM entry', async () => {
    await expect(importOptionalPackage('@kq-test/exports-manifest', { from: [app] })).resolves.toMatchObject({ kind: 'esm' });
    await expect(importOptionalPackage('@kq-test/hidden-manifest', { from: [app] })).resolves.toMatchObject({ kind: 'hidden' });
    await expect(importOptionalPackage('@kq-test/hidden-cjs-main', { from: [app] })).resolves.toMatchObject({ kind: 'module field' });
  });

  it('follows the kq-source condition only when the process runs kq from its sources, as every other import then does', async () => {
    const flag = Symbol.for('kq.resolvingSources');
    const global = globalThis as Record<symbol, unknown>;
    expect(global[flag]).toBeUndefined();
    await expect(importOptionalPackage('@kq-test/source-condition', { from: [app] })).resolves.toMatchObject({ kind: 'dist' });
    global[flag] = true;
    try {
      // A fresh specifier: the module cache holds the dist/ one under the other path.
      await expect(importOptionalPackage('@kq-test/source-condition', { from: [app] })).resolves.toMatchObject({ kind: 'sources' });
    } finally {
      delete global[flag];
    }
  });

  it('rejects with the module-not-found error when nobody has the package', async () => {
    const error = await importOptionalPackage('@kq-test/not-installed', { from: [app] }).catch((caught: unknown) => caught);
    expect(isModuleNotFound(error, '@kq-test/not-installed')).toBe(true);
  });

  it('loads what @kq/core itself can see without looking further', async () => {
    await expect(importOptionalPackage('node:path', { from: [] })).resolves.toHaveProperty('join');
  });
});
