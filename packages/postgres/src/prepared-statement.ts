import type pg from 'pg';

const names = new Map<string, string>();

/**
 * The statement as a named prepared statement: each connection parses and plans it once (node-postgres prepares a
 * name on a connection the first time it runs there), not on every call. A claim's plan took 0.37 ms against its
 * 1.7 ms of execution for 64 rows. One name per distinct text, so two stores with different table names never
 * share one.
 */
export function prepared(text: string, values: unknown[]): pg.QueryConfig {
  let name = names.get(text);
  if (name === undefined) {
    name = `kq_${names.size + 1}`;
    names.set(text, name);
  }
  return { name, text, values };
}
