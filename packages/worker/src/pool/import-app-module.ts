import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { KqError, installCommand } from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import type { TypedTasks } from '../task/task';

const TSX_REGISTERED = Symbol.for('kq.tsxRegistered');

/**
 * Imports an app module (the one a pool child runs tasks from, the CLI's `-A`) and returns its App (`export const
 * app` or the default export). A TypeScript module is loaded through tsx, registered here unless the bootstrap
 * already did. Typed as the contract, so the pool need not import the App; `loadAppModule` gives it as the App.
 */
export async function importAppModule(path: string): Promise<AppContract<TypedTasks>> {
  const file = isAbsolute(path) ? path : resolve(path);
  if (!existsSync(file)) throw new KqError(`Cannot find the app module ${path} (looked at ${file}). Pass the module that exports your App (-A / appModule).`);
  if (/\.[cm]?tsx?$/.test(file) && !(globalThis as Record<symbol, unknown>)[TSX_REGISTERED]) {
    try {
      const { register } = (await import('tsx/esm/api' as string)) as { register: () => void };
      register();
      (globalThis as Record<symbol, unknown>)[TSX_REGISTERED] = true;
    } catch (error) {
      throw new KqError(`${path} is TypeScript: install tsx (${installCommand('tsx', { dev: true })}) so kq can load it, or point -A / appModule at the compiled .js file.`, { cause: error });
    }
  }
  const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const candidate = module['app'] ?? module['default'];
  if (!isApp(candidate)) {
    throw new KqError(`${path} must export an App as \`app\` or as its default export (export const app = new App('proj', {...})).`);
  }
  return candidate;
}

/**
 * An App by its shape: this copy's, or one from the other build of @kq/worker (CommonJS next to ESM), which
 * `instanceof` would not recognise.
 */
function isApp(value: unknown): value is AppContract<TypedTasks> {
  if (typeof value !== 'object' || value === null) return false;
  const shape = value as Record<string, unknown>;
  return shape['tasks'] instanceof Map && typeof shape['sendTaskMessage'] === 'function' && typeof shape['conf'] === 'object';
}
