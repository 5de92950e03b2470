// claimPackageCopy: a second copy of a kq package in one process is a loud error, not silently failing instanceof.
import { describe, expect, it } from 'vitest';
import { claimPackageCopy, DuplicatePackageCopies } from '@kq/core';

describe('claimPackageCopy', () => {
  it('lets the copy that loaded first load again (the same module evaluated twice) and refuses another path', () => {
    claimPackageCopy('@kq-test/claimed', 'file:///srv/app/node_modules/@kq-test/claimed/dist/index.js');
    expect(() => claimPackageCopy('@kq-test/claimed', 'file:///srv/app/node_modules/@kq-test/claimed/dist/index.js')).not.toThrow();
    const error = (() => {
      try {
        claimPackageCopy('@kq-test/claimed', 'file:///srv/kq/packages/claimed/src/index.ts');
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(DuplicatePackageCopies);
    expect(error).toMatchObject({
      packageName: '@kq-test/claimed',
      firstPath: '/srv/app/node_modules/@kq-test/claimed/dist/index.js',
      secondPath: '/srv/kq/packages/claimed/src/index.ts',
    });
    expect((error as Error).message).toMatch(/^@kq-test\/claimed is loaded twice in this process, from \/srv\/app\/.* and from \/srv\/kq\/.*npm ls @kq-test\/claimed/);
  });

  it('keeps one record per package name, process-wide (a Symbol.for key every copy of @kq/core reads)', () => {
    claimPackageCopy('@kq-test/one', 'file:///a/one.js');
    expect(() => claimPackageCopy('@kq-test/two', 'file:///b/two.js')).not.toThrow();
    expect((globalThis as Record<symbol, unknown>)[Symbol.for('kq.package-copy.@kq-test/one')]).toBe('/a/one.js');
  });

  it('has every kq package this process loaded claimed by its sources (vitest runs them)', async () => {
    await import('@kq/worker');
    for (const name of ['@kq/core', '@kq/worker']) {
      expect((globalThis as Record<symbol, unknown>)[Symbol.for(`kq.package-copy.${name}`)]).toMatch(/\/packages\/\w+\/src\/([\w-]+\/)*[\w-]+\.ts$/);
    }
  });
});
