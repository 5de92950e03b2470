// argsrepr/kwargsrepr (Python repr, ≤1024 characters) and the origin node name.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { pythonRepr, pythonTupleRepr } from '@kq/core';
import { REPR_MAX_LENGTH, anonNodename, defaultArgsrepr, defaultKwargsrepr, encodeTaskMessage, truncateRepr } from '../src/protocol/index';

describe('argsrepr and kwargsrepr', () => {
  it('are Python reprs: tuples with the one-element comma, True/None, quote choice', () => {
    expect(defaultArgsrepr([])).toBe('()');
    expect(defaultArgsrepr(['x'])).toBe("('x',)");
    expect(defaultArgsrepr([2, 2])).toBe('(2, 2)');
    expect(defaultArgsrepr([true, null, "it's", 'say "hi"'])).toBe(`(True, None, "it's", 'say "hi"')`);
    expect(defaultKwargsrepr({ a: [1, { b: false }] })).toBe("{'a': [1, {'b': False}]}");
  });

  it('stop at 1024 characters with "..."', () => {
    const long = defaultArgsrepr(['x'.repeat(5000)]);
    expect(long).toHaveLength(REPR_MAX_LENGTH);
    expect(long.startsWith("('xxx")).toBe(true);
    expect(long.endsWith('x...')).toBe(true);
    expect(defaultKwargsrepr({ k: Array.from({ length: 5000 }, (_, i) => i) })).toHaveLength(REPR_MAX_LENGTH);
  });

  it('equal the full repr, truncated, for any value (clipping large values first changes nothing visible)', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 30 }),
      fc.string({ unit: fc.constantFrom('a', "'", '"', '\\', '\n', 'é', '𝄞'), minLength: 900, maxLength: 1500 }),
    );
    const leaf = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.uint8Array({ maxLength: 1200 }).map((b) => Buffer.from(b)));
    // Long flat lists and wide dicts exercise the element budget; nesting exercises the order of visits.
    const wide = fc.oneof(
      fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 3 })), { minLength: 300, maxLength: 600 }),
      fc.dictionary(fc.string({ maxLength: 6 }), fc.integer(), { minKeys: 100, maxKeys: 200 }),
    );
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, leaf, wide, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 4 })),
    }));
    fc.assert(
      fc.property(fc.array(value, { maxLength: 5 }), fc.dictionary(fc.string({ maxLength: 5 }), value, { maxKeys: 5 }), (args, kwargs) => {
        expect(defaultArgsrepr(args)).toBe(pythonTupleRepr(args, REPR_MAX_LENGTH));
        expect(defaultKwargsrepr(kwargs)).toBe(pythonRepr(kwargs, REPR_MAX_LENGTH));
      }),
      { numRuns: 200 },
    );
  });

  it('keep the quote style of a clipped string', () => {
    const single = "'" + 'a'.repeat(3000) + "'";
    const both = 'a'.repeat(3000) + `'"`;
    const quoteLate = 'a'.repeat(3000) + "'";
    for (const s of [single, both, quoteLate]) expect(defaultArgsrepr([s])).toBe(pythonTupleRepr([s], REPR_MAX_LENGTH));
    expect(defaultArgsrepr([quoteLate]).startsWith('("aaa')).toBe(true);
  });

  it('cost little for huge arguments (the encoder computes them on every publish)', () => {
    const huge = ['x'.repeat(5_000_000), Array.from({ length: 1_000_000 }, (_, i) => i)];
    // Clipping visits ~1 KB of data, so this is fast regardless of machine speed; the full repr would be seconds.
    expect(defaultArgsrepr(huge)).toHaveLength(REPR_MAX_LENGTH);
    const message = encodeTaskMessage({ id: 'a', name: 't', args: huge });
    expect(message.headers.argsrepr).toBe(defaultArgsrepr(huge));
  });

  it('truncateRepr keeps at most maxLength characters, ending in ...', () => {
    expect(truncateRepr('x'.repeat(1024))).toHaveLength(1024);
    const cut = truncateRepr('y'.repeat(5000));
    expect(cut).toHaveLength(1024);
    expect(cut.endsWith('...')).toBe(true);
    expect(truncateRepr('abcdef', 5)).toBe('ab...');
  });
});

describe('anonNodename', () => {
  it('is gen<pid>@<hostname>', () => {
    expect(anonNodename()).toMatch(new RegExp(`^gen${process.pid}@.+$`));
  });
});
