import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/** This package's folder: found by walking up from this module, whether it runs from `src/` or bundled in `dist/`. */
export function packageRoot(): string {
  if (root) return root;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === '@kq/dashboard') return (root = dir);
    if (dirname(dir) === dir) throw new Error('@kq/dashboard: cannot find its own package folder (ui/ files); reinstall it.');
  }
}
