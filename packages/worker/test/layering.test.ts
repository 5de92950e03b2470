/**
 * The package's layering, type-only imports included: the App is at the base (nothing it imports imports it back),
 * and no import cycle crosses a folder — a cycle inside one folder is one concept split over files.
 */
import { fileURLToPath } from 'node:url';
import madge from 'madge';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../src', import.meta.url));
const tsConfig = fileURLToPath(new URL('../../../tsconfig.json', import.meta.url));

describe('@kq/worker layering', () => {
  it('keeps App out of every import cycle and every cycle inside one folder', { timeout: 60_000 }, async () => {
    const graph = await madge(src, {
      fileExtensions: ['ts'],
      tsConfig,
      detectiveOptions: { ts: { skipTypeImports: false } },
    });
    const cycles = graph.circular().filter((cycle) => cycle.every((file) => !file.startsWith('..')));
    expect(cycles.filter((cycle) => cycle.includes('app/app.ts'))).toEqual([]);
    const folder = (file: string): string => (file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '.');
    expect(cycles.filter((cycle) => new Set(cycle.map(folder)).size > 1)).toEqual([]);
  });
});
