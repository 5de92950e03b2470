import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RedisClient } from './connection-factory';
import { permissionDeniedOf } from './connection-errors';

export type ScriptArgument = string | number | Buffer;

/**
 * Where the `.lua` files are: `lua/` at the package root, one level above both `src/` (run from source) and `dist/`
 * (the built bundle), so the same relative address works for both; the package ships the folder (`files`).
 */
const LUA_DIR = new URL('../lua/', import.meta.url);

/**
 * The script `lua/<name>.lua`, with the fragments named (shared functions, e.g. `prelude`) put before it in the
 * order given. Read once, at module load.
 */
export function loadLuaScript(name: string, ...fragments: readonly string[]): LuaScript {
  const source = [...fragments, name].map((file) => readFileSync(new URL(`${file}.lua`, LUA_DIR), 'utf8')).join('\n');
  return new LuaScript(name, source);
}

/**
 * A Lua script run with `EVALSHA`, falling back to `EVAL` once when the server does not know it yet (first use,
 * or after a restart or `SCRIPT FLUSH`), after which the server has it cached again.
 */
export class LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;

  constructor(name: string, source: string) {
    this.name = name;
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(client: RedisClient, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown> {
    try {
      try {
        return await client.evalsha(this.sha, keys.length, ...keys, ...args);
      } catch (error) {
        if (!isNoScript(error)) throw error;
        return await client.eval(this.source, keys.length, ...keys, ...args);
      }
    } catch (error) {
      // An ACL refusal inside the script names only its line: said as the command on that line.
      throw permissionDeniedOf(error, this) ?? error;
    }
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
