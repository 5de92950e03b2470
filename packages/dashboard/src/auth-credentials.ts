import { readFile } from 'node:fs/promises';
import { KqError } from '@kq/core';

/** The environment variables the CLI reads `user:password[,user:password…]` from: kq's, then Flower's own. */
export const AUTH_ENV_VARS = ['KQ_DASHBOARD_AUTH', 'FLOWER_BASIC_AUTH'] as const;

/**
 * The basic-auth pairs the dashboard CLI lets in: the lines of `file` (one `user:password` a line; blank lines and
 * `#` comments skipped, so a password may hold commas) and the pairs of `KQ_DASHBOARD_AUTH` / `FLOWER_BASIC_AUTH`
 * (comma-separated). Never the command line, which `ps` shows every user of the machine. A malformed entry is named
 * by its place, never quoted: it may be a password.
 */
export async function readAuthCredentials(file: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const pairs: string[] = [];
  if (file !== undefined) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new KqError(`Cannot read the --auth-file ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}. It holds user:password lines, one a line.`);
    }
    const lines = text.split(/\r?\n/);
    lines.forEach((line, index) => {
      const entry = line.trim();
      if (entry === '' || entry.startsWith('#')) return;
      if (!isPair(entry)) throw new KqError(`Line ${index + 1} of the --auth-file ${file} is not user:password (one pair a line).`);
      pairs.push(entry);
    });
    if (pairs.length === 0) throw new KqError(`The --auth-file ${file} has no user:password line: with none, anyone could come in.`);
  }
  for (const name of AUTH_ENV_VARS) {
    const value = env[name];
    if (!value) continue;
    const entries = value.split(',').map((entry) => entry.trim()).filter(Boolean);
    entries.forEach((entry, index) => {
      if (!isPair(entry)) throw new KqError(`Entry ${index + 1} of ${name} is not user:password (pairs are comma-separated).`);
    });
    pairs.push(...entries);
  }
  return pairs;
}

/** `user:password` with a user and a password (the password may hold colons; the user cannot, as in HTTP). */
function isPair(entry: string): boolean {
  const colon = entry.indexOf(':');
  return colon > 0 && colon < entry.length - 1;
}
