import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { randomUuid } from '../src/random-uuid';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('randomUuid', () => {
  it('writes version 4 UUIDs in crypto.randomUUID form, across many random-byte batches', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const id = randomUuid();
      expect(id).toMatch(V4);
      seen.add(id);
    }
    expect(seen.size).toBe(5000);
  });

  it('returns strings that later calls do not change (the ASCII buffer is reused)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 300 }), (count) => {
        const ids = Array.from({ length: count }, () => randomUuid());
        const copies = ids.map((id) => `${id}`);
        randomUuid();
        expect(ids).toEqual(copies);
        expect(new Set(ids).size).toBe(count);
      }),
    );
  });

  it('uses every hex digit in every random position', () => {
    const digits = Array.from({ length: 36 }, () => new Set<string>());
    for (let i = 0; i < 4000; i++) [...randomUuid()].forEach((char, at) => digits[at]?.add(char));
    for (const at of [0, 7, 9, 15, 20, 35]) expect(digits[at]?.size).toBe(16);
    expect([...(digits[14] ?? [])]).toEqual(['4']);
    expect([...(digits[19] ?? [])].sort()).toEqual(['8', '9', 'a', 'b']);
  });
});
