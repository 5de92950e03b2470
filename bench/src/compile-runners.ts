// Runners run as plain JavaScript, the way users run a built application: bundled from src/runners/*.ts by esbuild
// before the cases (their own files only; every package stays an import resolved from bench/node_modules).
//
// Why not tsx, as before: kq's packages are linked from the workspace, and tsx recompiled their built files on load
// (esbuild output plus an inline source map, held in memory), which cost each kq runner ~60 MiB of resident memory
// and some CPU that no installed application pays; the peers, loaded from node_modules, were passed through untouched.
import { mkdir } from 'node:fs/promises';

import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { SYSTEM_IDS } from './systems';

/** Where the compiled runners go (git-ignored; rebuilt by every bench run). */
export const COMPILED_RUNNERS_DIR = fileURLToPath(new URL('../.runners', import.meta.url));

/** Bundles every Node runner to `<dir>/<system>.mjs`; returns the directory. */
export async function compileRunners(dir = COMPILED_RUNNERS_DIR): Promise<string> {
  await mkdir(dir, { recursive: true });
  const entryPoints = SYSTEM_IDS.filter((system) => system !== 'python-celery').map((system) => ({
    in: fileURLToPath(new URL(`./runners/${system}.ts`, import.meta.url)),
    out: system,
  }));
  await build({
    entryPoints,
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // The runners' tsconfig (no `paths`): with the repository's, @kq/* would be bundled from the TypeScript sources.
    tsconfig: fileURLToPath(new URL('../tsconfig.runners.json', import.meta.url)),
    logLevel: 'warning',
  });
  return dir;
}

