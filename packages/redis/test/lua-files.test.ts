import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Every `loadLuaScript('name', 'fragment'...)` call in the package's sources: the files they read. */
function filesLoaded(): Set<string> {
  const used = new Set<string>();
  for (const file of readdirSync(`${ROOT}src`)) {
    const source = readFileSync(`${ROOT}src/${file}`, 'utf8');
    for (const call of source.matchAll(/loadLuaScript\(([^)]*)\)/g)) {
      for (const name of (call[1] as string).matchAll(/'([^']+)'/g)) used.add(`${name[1]}.lua`);
    }
  }
  return used;
}

describe('the Lua scripts as files', () => {
  it('ships lua/ with the package, and every script file there is one the sources load (and the reverse)', () => {
    const manifest = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { files: string[] };
    expect(manifest.files).toContain('lua');
    const onDisk = new Set(readdirSync(`${ROOT}lua`));
    expect([...filesLoaded()].sort()).toEqual([...onDisk].sort());
  });
});
