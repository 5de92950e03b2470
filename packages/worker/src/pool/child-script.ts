import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { KqError } from '@kq/core';

/** What a pool starts a child with: the script to run and, from the TypeScript sources, the entry it loads. */
export interface ChildScript {
  /** A JavaScript file Node can run as is. */
  readonly script: URL;
  /** Set when `script` is the tsx bootstrap: the TypeScript child entry it imports after registering tsx. */
  readonly entry: URL | null;
}

let located: ChildScript | undefined;

/**
 * Finds the child entry: `pool/child.js` next to the built package (tsup emits it as an extra entry beside
 * `index.js`, sharing its chunks, so an app module importing `@kq/worker` gets the same classes), or, when running
 * from the sources (tests, tsx), `child.ts` started through `child-bootstrap.mjs`, which registers tsx first.
 */
export function childScript(): ChildScript {
  if (located) return located;
  const candidates = [new URL('./pool/child.js', import.meta.url), new URL('./child.js', import.meta.url)];
  for (const script of candidates) {
    if (existsSync(fileURLToPath(script))) return (located = { script, entry: null });
  }
  const entry = new URL('./child.ts', import.meta.url);
  const bootstrap = new URL('./child-bootstrap.mjs', import.meta.url);
  if (existsSync(fileURLToPath(entry)) && existsSync(fileURLToPath(bootstrap))) return (located = { script: bootstrap, entry });
  throw new KqError(
    `Cannot find the pool child entry next to ${fileURLToPath(import.meta.url)} (pool/child.js in the built package). ` +
      `Reinstall @kq/worker, or use the async pool.`,
  );
}
