#!/usr/bin/env node
// The `kq-dashboard` bin: the built CLI, or in a checkout of the kq repository the sources through tsx.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import(new URL('../dist/cli.js', import.meta.url).href);
}
