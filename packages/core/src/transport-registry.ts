import { TransportNotInstalled, UnknownTransport } from './errors';
import { MemoryTransport } from './memory/memory-transport';
import { importOptionalPackage, isModuleNotFound } from './optional-package';
import type { Transport } from './transport';

/** Options passed through to the transport a URL selects (each transport documents its own). */
export type TransportOptions = Record<string, unknown>;

/** Makes a transport for a URL. Transport packages export one as `createTransport`. */
export type TransportFactory = (url: string, options: TransportOptions) => Transport | Promise<Transport>;

/** What a transport package must export to be loadable by URL scheme. */
export interface TransportModule {
  createTransport: TransportFactory;
}

interface RegistryEntry {
  factory?: TransportFactory;
  /** Package to import on demand when no factory is registered yet. */
  packageName?: string;
}

const registry = new Map<string, RegistryEntry>([
  ['memory', { factory: (url, options) => MemoryTransport.fromUrl(url, options) }],
  ['redis', { packageName: '@kq/redis' }],
  ['rediss', { packageName: '@kq/redis' }],
  ['sentinel', { packageName: '@kq/redis' }],
  ['redis+cluster', { packageName: '@kq/redis' }],
  ['rediss+cluster', { packageName: '@kq/redis' }],
  ['amqp', { packageName: '@kq/amqp' }],
  ['amqps', { packageName: '@kq/amqp' }],
  ['postgresql', { packageName: '@kq/postgres' }],
  ['postgres', { packageName: '@kq/postgres' }],
  ['sqla+postgresql', { packageName: '@kq/postgres' }],
]);

/**
 * Adds (or replaces) the transport used for `scheme://` URLs: a factory, or the name of a package exporting
 * `createTransport` that is imported on first use (so an uninstalled optional transport costs nothing).
 */
export function registerTransport(scheme: string, factory: TransportFactory | string): void {
  registry.set(normaliseScheme(scheme), typeof factory === 'string' ? { packageName: factory } : { factory });
}

/** The schemes kq knows, installed or not. */
export function knownSchemes(): string[] {
  return [...registry.keys()];
}

/**
 * Makes the transport for a broker URL, importing its package on first use. A missing package is a
 * `TransportNotInstalled` error that names the package to install.
 */
export async function createTransport(url: string, options: TransportOptions = {}): Promise<Transport> {
  const scheme = schemeOf(url);
  const entry = registry.get(scheme);
  if (!entry) throw new UnknownTransport(scheme, knownSchemes());
  if (!entry.factory && entry.packageName) entry.factory = await loadFactory(scheme, entry.packageName);
  if (!entry.factory) throw new UnknownTransport(scheme, knownSchemes());
  return entry.factory(url, options);
}

function schemeOf(url: string): string {
  const match = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url);
  if (!match?.[1]) {
    throw new UnknownTransport(url, knownSchemes());
  }
  return normaliseScheme(match[1]);
}

function normaliseScheme(scheme: string): string {
  return scheme.toLowerCase().replace(/:\/\/$/, '').replace(/:$/, '');
}

async function loadFactory(scheme: string, packageName: string): Promise<TransportFactory> {
  let module: Partial<TransportModule>;
  try {
    module = (await importOptionalPackage(packageName)) as Partial<TransportModule>;
  } catch (error) {
    if (isModuleNotFound(error, packageName)) throw new TransportNotInstalled(scheme, packageName, { cause: error });
    throw error;
  }
  if (typeof module.createTransport !== 'function') {
    throw new TransportNotInstalled(scheme, packageName, {
      cause: new Error(`${packageName} does not export createTransport(); is it a kq transport package?`),
    });
  }
  return module.createTransport;
}
