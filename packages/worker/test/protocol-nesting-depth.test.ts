import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nestingDeeperThan } from '../src/protocol/nesting-depth';

/** The plain definition: the deepest list or object below the root (the root itself is level 0). */
function deepestLevel(value: unknown, level = 0): number {
  if (typeof value !== 'object' || value === null || Buffer.isBuffer(value) || value instanceof Date) return -1;
  const children = Array.isArray(value) ? value : Object.values(value);
  return Math.max(level, ...children.map((child) => deepestLevel(child, level + 1)));
}

const nest = (levels: number): unknown => {
  let value: unknown = { leaf: 1 };
  for (let i = 1; i < levels; i++) value = i % 2 ? [value] : { inner: value };
  return value;
};

describe('nestingDeeperThan', () => {
  it('agrees with the plain definition around its shallow first look and the message limit', () => {
    for (let levels = 1; levels <= 8; levels++) {
      for (let limit = 0; limit <= 8; limit++) expect(nestingDeeperThan(nest(levels), limit)).toBe(deepestLevel(nest(levels)) >= limit);
    }
    expect(nestingDeeperThan(nest(1001), 1000)).toBe(true);
    expect(nestingDeeperThan(nest(1000), 1000)).toBe(false);
  });

  it('agrees with the plain definition on any JSON value, Buffers and Dates being leaves', () => {
    const leaf = fc.oneof(fc.constant(Buffer.from('x')), fc.constant(new Date(0)), fc.integer(), fc.string(), fc.constant(null));
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('tree'), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 3 }), tie('tree'), { maxKeys: 3 })),
    }));
    fc.assert(
      fc.property(tree, fc.integer({ min: 0, max: 7 }), (value, limit) => {
        expect(nestingDeeperThan(value, limit)).toBe(deepestLevel(value) >= limit);
      }),
      { numRuns: 500 },
    );
  });
});
