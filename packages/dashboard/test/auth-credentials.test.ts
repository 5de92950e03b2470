// Basic-auth credentials come from a file or the environment (never the command line), and a malformed entry is
// reported by its place, never quoted: it may be a password.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAuthCredentials } from '../src/auth-credentials';

const dir = mkdtempSync(join(tmpdir(), 'kq-auth-'));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
};

describe('readAuthCredentials', () => {
  it('reads one user:password a line, skipping blank lines and # comments; a password may hold colons and commas', async () => {
    const path = file('ok', '# who may come in\nadmin:s3cret\n\n  ops:a:b,c  \r\n');
    expect(await readAuthCredentials(path, {})).toEqual(['admin:s3cret', 'ops:a:b,c']);
  });

  it('reads comma-separated pairs from KQ_DASHBOARD_AUTH and Flower\'s FLOWER_BASIC_AUTH, after the file', async () => {
    const path = file('one', 'admin:s3cret\n');
    expect(await readAuthCredentials(path, { KQ_DASHBOARD_AUTH: 'a:1, b:2', FLOWER_BASIC_AUTH: 'c:3' })).toEqual(['admin:s3cret', 'a:1', 'b:2', 'c:3']);
    expect(await readAuthCredentials(undefined, {})).toEqual([]);
  });

  it('names a malformed line or entry by its number, without quoting it', async () => {
    const path = file('bad', 'admin:s3cret\nhunter2-without-user\n');
    await expect(readAuthCredentials(path, {})).rejects.toThrow(`Line 2 of the --auth-file ${path} is not user:password (one pair a line).`);
    await expect(readAuthCredentials(path, {})).rejects.not.toThrow(/hunter2/);
    await expect(readAuthCredentials(undefined, { KQ_DASHBOARD_AUTH: 'a:1,hunter2' })).rejects.toThrow('Entry 2 of KQ_DASHBOARD_AUTH is not user:password (pairs are comma-separated).');
    await expect(readAuthCredentials(undefined, { KQ_DASHBOARD_AUTH: 'admin:' })).rejects.toThrow(/Entry 1/);
  });

  it('refuses a file with no pair (it would let anyone in) and says when the file cannot be read', async () => {
    const empty = file('empty', '# nobody yet\n\n');
    await expect(readAuthCredentials(empty, {})).rejects.toThrow(/has no user:password line/);
    await expect(readAuthCredentials(join(dir, 'missing'), {})).rejects.toThrow(/Cannot read the --auth-file .*missing: ENOENT/);
  });
});
