import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface ImportOptionalOptions {
  /** Directories to resolve from when @kq/core cannot see the package. Default: the working directory and the main script's. */
  from?: readonly string[];
}

/**
 * Imports an optional package kq loads on demand (`@kq/redis` for a `redis://` URL...). First as @kq/core sees it;
 * then, if it is not found there, as the application sees it: with pnpm's strict layout @kq/core cannot see the
 * packages installed next to it (only its own dependencies), though the application that installed both can.
 * Rejects with the first error when neither finds it.
 */
export async function importOptionalPackage(name: string, options: ImportOptionalOptions = {}): Promise<unknown> {
  try {
    return await import(/* @vite-ignore */ name);
  } catch (error) {
    if (!isModuleNotFound(error, name)) throw error;
    const entry = resolveFromApplication(name, options.from ?? applicationDirectories());
    if (entry === undefined) throw error;
    return import(/* @vite-ignore */ pathToFileURL(entry).href);
  }
}

/** True when `error` says `packageName` (or a file of it) could not be found. */
export function isModuleNotFound(error: unknown, packageName: string): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  const notFound = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
  return notFound && (typeof message !== 'string' || message.includes(packageName));
}

const RESOLVING_SOURCES = Symbol.for('kq.resolvingSources');

function applicationDirectories(): string[] {
  const main = process.argv[1];
  return [process.cwd(), ...(main ? [dirname(main)] : [])];
}

/** The ESM entry of `name` as resolved from one of `directories` (its package.json's `exports` / `module` / `main`). */
function resolveFromApplication(name: string, directories: readonly string[]): string | undefined {
  for (const directory of directories) {
    const manifestPath = manifestOf(name, createRequire(join(directory, 'package.json')));
    if (manifestPath === undefined) continue;
    let manifest: Manifest;
    try {
      manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Manifest;
    } catch {
      continue; // unreadable: as if not found here
    }
    const entry = esmEntryOf(manifest);
    if (entry !== undefined) return join(dirname(manifestPath), entry);
  }
  return undefined;
}

/** The package.json of `name`: exported as `name/package.json`, or found above the file `name` resolves to. */
function manifestOf(name: string, require: NodeJS.Require): string | undefined {
  try {
    return require.resolve(`${name}/package.json`);
  } catch {
    // not exported: look upwards from its main file
  }
  let file: string;
  try {
    file = require.resolve(name);
  } catch {
    return undefined;
  }
  for (let directory = dirname(file); directory !== dirname(directory); directory = dirname(directory)) {
    try {
      const candidate = join(directory, 'package.json');
      if ((JSON.parse(readFileSync(candidate, 'utf8')) as { name?: unknown }).name === name) return candidate;
    } catch {
      // no package.json here
    }
  }
  return undefined;
}

interface Manifest {
  exports?: unknown;
  module?: unknown;
  main?: unknown;
}

function esmEntryOf(manifest: Manifest): string | undefined {
  const root = isRecord(manifest.exports) && '.' in manifest.exports ? manifest.exports['.'] : manifest.exports;
  const target = conditionTarget(root);
  if (target !== undefined) return target;
  if (typeof manifest.module === 'string') return manifest.module;
  return typeof manifest.main === 'string' ? manifest.main : 'index.js';
}

/**
 * Follows `import` (else `node`, else `default`) conditions down to a path; first `kq-source` when the process runs kq
 * from its sources (worker/src/platform/source-mode.mjs sets the flag), so this gets the copy every other import gets.
 */
function conditionTarget(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (!isRecord(value)) return undefined;
  const sources = (globalThis as Record<symbol, unknown>)[RESOLVING_SOURCES] === true;
  for (const condition of sources ? ['kq-source', 'import', 'node', 'default'] : ['import', 'node', 'default']) {
    const found = conditionTarget(value[condition]);
    if (found !== undefined) return found;
  }
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
