#!/usr/bin/env node
// The `kq-dashboard` bin: the built CLI, or in a checkout of the kq repository the sources through tsx, with every
// `@kq/*` import resolved to the sources (@kq/worker's source-mode.mjs), so an app module loads the CLI's copy.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const source = new URL('../src/cli.ts', import.meta.url);
if (existsSync(source)) {
  const worker = dirname(createRequire(import.meta.url).resolve('@kq/worker/package.json'));
  const { runFromSources } = await import(pathToFileURL(join(worker, 'src', 'platform', 'source-mode.mjs')).href);
  await runFromSources();
  await import(source.href);
} else {
  await import(new URL('../dist/cli.js', import.meta.url).href);
}
