import { createHash } from 'node:crypto';
import type { RedisClient } from './connection-factory';
import { permissionDeniedOf } from './connection-errors';

export type ScriptArgument = string | number | Buffer;

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
