import { fileURLToPath } from 'node:url';
import { DuplicatePackageCopies } from './errors';

/**
 * Records, process-wide, that the kq package `name` was loaded from `moduleUrl` (the `import.meta.url` of a module
 * its every entry point loads), and throws `DuplicatePackageCopies` when another copy of it loaded first: the
 * sources next to dist/, the CommonJS build next to the ESM one, a second install. Every @kq package calls it once at
 * load, so a second copy fails loudly where it would otherwise fail `instanceof` checks silently (issue #30).
 * The record lives under a `Symbol.for` key on `globalThis`, the one place all copies share.
 */
export function claimPackageCopy(name: string, moduleUrl: string): void {
  const key = Symbol.for(`kq.package-copy.${name}`);
  const copies = globalThis as Record<symbol, unknown>;
  const here = pathOf(moduleUrl);
  const first = copies[key];
  if (typeof first !== 'string') {
    Object.defineProperty(globalThis, key, { value: here, configurable: false, enumerable: false, writable: false });
    return;
  }
  if (first !== here) throw new DuplicatePackageCopies(name, first, here);
}

function pathOf(moduleUrl: string): string {
  return moduleUrl.startsWith('file:') ? fileURLToPath(moduleUrl) : moduleUrl;
}

claimPackageCopy('@kq/core', import.meta.url);
