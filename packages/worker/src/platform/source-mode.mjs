// Running kq from its TypeScript sources (a checkout of the repository, a pnpm/yarn workspace, `npm link`): the `kq`
// and `kq-dashboard` bins and the pool children's bootstrap call `runFromSources()` before importing any source file.
// Plain JavaScript, as it runs before tsx is registered (and as a module-hooks file).
//
// Every @kq package's `exports` names its sources under the `kq-source` condition. Enabling that condition for the
// whole process makes `@kq/worker` resolve to the sources from everywhere: from the CLI, and from a user's app module
// outside the repository, JavaScript or TypeScript. Without it the CLI ran the sources while the app got dist/, two
// copies of every class, and `instanceof` between them failed silently (issue #30).
import { register } from 'node:module';

export const SOURCE_CONDITION = 'kq-source';

const TSX_REGISTERED = Symbol.for('kq.tsxRegistered');
// Read by @kq/core's importOptionalPackage, which resolves some packages itself.
const RESOLVING_SOURCES = Symbol.for('kq.resolvingSources');

/** Registers tsx and the `kq-source` condition for `import` in this thread. */
export async function runFromSources() {
  if (globalThis[RESOLVING_SOURCES]) return;
  const { register: registerTsx } = await import('tsx/esm/api');
  registerTsx();
  // Registered after tsx, so it runs first and hands tsx (and Node's resolver after it) the added condition.
  register(import.meta.url);
  globalThis[TSX_REGISTERED] = true;
  globalThis[RESOLVING_SOURCES] = true;
}

/** Module-hooks `resolve`: every import is resolved with the `kq-source` condition too. */
export async function resolve(specifier, context, nextResolve) {
  if (context.conditions.includes(SOURCE_CONDITION)) return nextResolve(specifier, context);
  return nextResolve(specifier, { ...context, conditions: [SOURCE_CONDITION, ...context.conditions] });
}
