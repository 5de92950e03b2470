// kq's field-table decoder against amqplib's own, on tables amqplib encodes: the same values for every tag amqplib
// knows, whatever the keys (the decoder hands out cached key strings) and however deep the nesting.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import '../src/amqplib-loader';
import { decodeFieldTable } from '../src/field-table-decoder';
import { fromDecodedFieldTable, fromFieldTable, toFieldTable } from '../src/field-table';
import { KeyCache } from '../src/key-cache';

interface Codec {
  encodeTable: (buffer: Buffer, value: unknown, offset: number) => number;
  decodeFields: (slice: Buffer) => Record<string, unknown>;
}

const require = createRequire(import.meta.url);
const codecPath = join(dirname(require.resolve('amqplib')), 'lib', 'codec.js');

/** amqplib's codec as shipped: kq replaced `decodeFields` on the cached module, so a fresh copy is loaded aside. */
function stockCodec(): Codec {
  const cached = require.cache[codecPath];
  delete require.cache[codecPath];
  try {
    return require(codecPath) as Codec;
  } finally {
    if (cached) require.cache[codecPath] = cached;
  }
}

const stock = stockCodec();

function encode(table: Record<string, unknown>): Buffer {
  const buffer = Buffer.alloc(64 * 1024);
  const size = stock.encodeTable(buffer, table, 0);
  return Buffer.from(buffer.subarray(4, size)); // without the table's length prefix, as decodeFields receives it
}

// Header names repeat from message to message (the cache's hits); random ones (ASCII or not) are its misses.
const key = fc.oneof(
  fc.constantFrom('lang', 'task', 'id', 'root_id', 'parent_id', 'retries', 'timelimit', 'stamps', 'x-death', 'ü-key'),
  fc.string({ minLength: 0, maxLength: 70, unit: 'grapheme' }).filter((text) => Buffer.byteLength(text) <= 255 && text !== '__proto__'),
);

const leaf = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.uint8Array({ maxLength: 8 }).map((bytes) => Buffer.from(bytes)),
  fc.date({ min: new Date(0), max: new Date(4_000_000_000_000), noInvalidDate: true }),
  // amqplib's explicit tags, including the ones kq's encoder never picks
  fc.integer({ min: -128, max: 127 }).map((value) => ({ '!': 'byte', value })),
  fc.integer({ min: -32768, max: 32767 }).map((value) => ({ '!': 'short', value })),
  fc.float({ noNaN: true }).map((value) => ({ '!': 'float', value })),
  fc.record({ places: fc.integer({ min: 0, max: 9 }), digits: fc.nat() }).map((value) => ({ '!': 'decimal', value })),
);

const { table } = fc.letrec<{ table: Record<string, unknown>; value: unknown }>((tie) => ({
  table: fc.dictionary(key, tie('value'), { maxKeys: 8 }),
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, fc.array(tie('value'), { maxLength: 4 }), tie('table')),
}));

describe('decodeFieldTable', () => {
  it('decodes whatever amqplib encodes exactly as amqplib does', () => {
    fc.assert(
      fc.property(table, (input) => {
        const wire = encode(toFieldTable(input));
        expect(decodeFieldTable(wire)).toEqual(stock.decodeFields(wire));
      }),
      { numRuns: 500 },
    );
  });

  it('converts a decoded table exactly as a walk over it would', () => {
    fc.assert(
      fc.property(table, (input) => {
        const wire = encode(toFieldTable(input));
        const converted = fromDecodedFieldTable(decodeFieldTable(wire));
        expect(converted).toEqual(fromFieldTable(stock.decodeFields(wire)));
      }),
      { numRuns: 300 },
    );
  });

  it("sends a table that merely has a '!' key as a table, not as amqplib's type tag (found by the property above)", () => {
    for (const input of [{ lang: { '': [{ '!': null }] } }, { h: { '!': 'x', value: 1 } }, { h: { '!': 'float', value: 1.5, more: true } }]) {
      const wire = encode(toFieldTable(input));
      expect(fromDecodedFieldTable(decodeFieldTable(wire))).toEqual(input);
    }
  });

  it('hands back the decoded table itself when it holds nothing to convert', () => {
    const decoded = decodeFieldTable(encode(toFieldTable({ id: 'x', timelimit: [null, null], stamps: { a: [1] } })));
    expect(fromDecodedFieldTable(decoded)).toBe(decoded);
  });

  it('keeps what follows a bad entry in a nested table, and the bytes of the bad part', () => {
    const good = encode({ a: 'x' });
    const nested = Buffer.concat([good, Buffer.from([1, 0x62 /* b */, 0x5a /* unknown tag Z */, 1, 2])]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(nested.length);
    const wire = Buffer.concat([Buffer.from([1, 0x6e /* n */, 0x46 /* F */]), length, nested, encode({ after: 1 })]);
    const decoded = decodeFieldTable(wire);
    expect(decoded['after']).toBe(1);
    expect((decoded['n'] as Record<string, unknown>)['a']).toBe('x');
    expect((decoded['n'] as Record<string, unknown>)['b']).toEqual(Buffer.from([0x5a, 1, 2]));
  });
});

describe('KeyCache', () => {
  const decode = (buffer: Buffer, start: number, end: number): string => buffer.toString('utf8', start, end);

  it('returns the UTF-8 text of the bytes, hit or miss, collisions included', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            // short ASCII keys, many of one length: what the cache holds, and where collisions must be told apart
            fc.string({ unit: fc.constantFrom('a', 'b', '_', '-', 'Z'), maxLength: 6 }),
            fc.string({ unit: 'grapheme', maxLength: 80 }),
            fc.uint8Array({ maxLength: 80 }).map((bytes) => Buffer.from(bytes)),
          ),
          { minLength: 1, maxLength: 40 },
        ),
        fc.array(fc.nat(), { minLength: 1, maxLength: 200 }),
        fc.constantFrom(1, 2, 4, 512),
        (pool, picks, slotCount) => {
          // The pool's keys read in random order and at random offsets of a larger buffer; few slots force collisions.
          const cache = new KeyCache(decode, slotCount);
          for (const pick of picks) {
            const entry = pool[pick % pool.length] as string | Buffer;
            const bytes = typeof entry === 'string' ? Buffer.from(entry) : entry;
            const padding = pick % 3;
            const buffer = Buffer.concat([Buffer.alloc(padding, 0x41), bytes, Buffer.alloc(2, 0x42)]);
            expect(cache.get(buffer, padding, bytes.length)).toBe(bytes.toString('utf8'));
          }
        },
      ),
    );
  });

  it('hands out one string per key', () => {
    const cache = new KeyCache(decode);
    const first = cache.get(Buffer.from('xroot_id'), 1, 7);
    expect(cache.get(Buffer.from('root_idy'), 0, 7)).toBe(first);
  });
});
