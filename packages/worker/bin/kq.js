#!/usr/bin/env node
// The `kq` bin. A committed file rather than dist/cli/kq.js itself, so package managers link it at install time
// even in a fresh clone of the kq repository, where dist/ appears only with the first build.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/kq.ts', import.meta.url);
if (existsSync(source)) {
  // A checkout of the kq repository (src/ is not published): run the sources through tsx, with every `@kq/*` import
  // in the process (the app module's too, from wherever it is) resolved to the sources, so there is one copy of each.
  const { runFromSources } = await import('../src/platform/source-mode.mjs');
  await runFromSources();
  await import(source.href);
} else {
  const built = new URL('../dist/cli/kq.js', import.meta.url);
  if (!existsSync(built)) {
    console.error('kq: this @kq/worker has no dist/ folder: reinstall it.');
    process.exit(1);
  }
  await import(built.href);
}
