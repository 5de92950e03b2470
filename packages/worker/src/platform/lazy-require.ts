import { createRequire } from 'node:module';

/**
 * A dependency loaded the first time a feature needs it, not when `@kq/worker` is imported: pino (JSON logs), yaml
 * (schedule files) and cron-parser (cron entries) cost an idle worker several MiB of memory and start-up time, and
 * most workers never use them. They are CommonJS packages, so `require` loads them synchronously where they are
 * first needed (a sink, a parse) and the callers stay synchronous.
 */
export function lazyRequire<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= createRequire(import.meta.url)(name) as T);
}
