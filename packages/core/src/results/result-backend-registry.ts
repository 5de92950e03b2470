import { TransportNotInstalled, UnknownTransport } from '../errors';
import { MemoryResultBackend } from './memory-result-backend';
import { importOptionalPackage } from '../optional-package';
import type { ResultBackend } from './result-backend';

/** Options for a result backend; `connection` is the app's broker connection for backends that ride on it (rpc). */
export type ResultBackendOptions = Record<string, unknown>;
export type ResultBackendFactory = (url: string, options: ResultBackendOptions) => ResultBackend | Promise<ResultBackend>;

interface Entry {
  factory?: ResultBackendFactory;
  packageName?: string;
}

const registry = new Map<string, Entry>([
  ['memory', { factory: (url) => MemoryResultBackend.fromUrl(url) }],
  ['redis', { packageName: '@kq/redis' }],
  ['rediss', { packageName: '@kq/redis' }],
  ['sentinel', { packageName: '@kq/redis' }],
  ['redis+cluster', { packageName: '@kq/redis' }],
  ['rediss+cluster', { packageName: '@kq/redis' }],
  ['postgresql', { packageName: '@kq/postgres' }],
  ['postgres', { packageName: '@kq/postgres' }],
]);

/** Adds the backend for `scheme://` URLs: a factory, or a package exporting `createResultBackend`. */
export function registerResultBackend(scheme: string, factory: ResultBackendFactory | string): void {
  registry.set(scheme.toLowerCase(), typeof factory === 'string' ? { packageName: factory } : { factory });
}

/** Makes the result backend for a URL (`memory://`, `redis://…`, `rpc://` once @kq/worker is loaded). */
export async function createResultBackend(url: string, options: ResultBackendOptions = {}): Promise<ResultBackend> {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase() ?? url;
  const entry = registry.get(scheme);
  if (!entry) throw new UnknownTransport(scheme, [...registry.keys()]);
  if (!entry.factory && entry.packageName) {
    const packageName = entry.packageName;
    let module: { createResultBackend?: ResultBackendFactory };
    try {
      module = (await importOptionalPackage(packageName)) as { createResultBackend?: ResultBackendFactory };
    } catch (error) {
      throw new TransportNotInstalled(scheme, packageName, { cause: error });
    }
    if (typeof module.createResultBackend !== 'function') {
      throw new TransportNotInstalled(scheme, packageName, { cause: new Error(`${packageName} has no createResultBackend()`) });
    }
    entry.factory = module.createResultBackend;
  }
  return (entry.factory as ResultBackendFactory)(url, options);
}
