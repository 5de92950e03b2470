// What a user installing the packages one by one gets: a licence, public scoped packages, declared side effects,
// and a `kq` bin that exists before any build (so installs link it).
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const published = ['packages/core', 'packages/redis', 'packages/amqp', 'packages/postgres', 'packages/worker', 'packages/dashboard', 'test-harness'];

describe.each(published)('%s as published', (dir) => {
  const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as Record<string, unknown>;

  it('carries the MIT licence and says so', () => {
    expect(pkg['license']).toBe('MIT');
    expect(readFileSync(join(root, dir, 'LICENSE'), 'utf8')).toContain('MIT License');
    if (Array.isArray(pkg['files'])) expect(pkg['files']).toContain('LICENSE');
  });

  it('is public under the @kq scope, with keywords and a README', () => {
    expect(String(pkg['name'])).toMatch(/^@kq\//);
    expect(pkg['publishConfig']).toEqual({ access: 'public' });
    expect((pkg['keywords'] as string[]).length).toBeGreaterThan(2);
    expect(existsSync(join(root, dir, 'README.md'))).toBe(true);
  });
});

describe('side effects and the bin', () => {
  it('declares which packages have import-time side effects (amqp patches amqplib\'s decoder; the others none)', () => {
    const sideEffects = (dir: string): unknown => (JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as Record<string, unknown>)['sideEffects'];
    expect(['core', 'redis', 'postgres', 'worker', 'dashboard'].map((name) => sideEffects(`packages/${name}`))).toEqual([false, false, false, false, false]);
    expect(sideEffects('packages/amqp')).toBe(true);
  });

  it('links `kq` to a committed, executable launcher that is in the published files', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'packages/worker/package.json'), 'utf8')) as { bin: Record<string, string>; files: string[] };
    const bin = join(root, 'packages/worker', pkg.bin['kq'] as string);
    expect(() => accessSync(bin, constants.X_OK)).not.toThrow();
    expect(readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node')).toBe(true);
    expect(pkg.files).toContain('bin');
  });
});
