import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodesWithThisCopy, tolerantFieldTables } from '../src/amqplib-loader';
import { decodeFieldTable } from '../src/field-table-decoder';
import { fromFieldTable, toFieldTable } from '../src/field-table';

/** amqplib's own encoder, to see the exact tags kq's typed values produce on the wire. */
const require = createRequire(import.meta.url);
const codec = require(join(dirname(require.resolve('amqplib')), 'lib', 'codec.js')) as {
  encodeTable: (buffer: Buffer, value: unknown, offset: number) => number;
};

function encode(table: Record<string, unknown>): Buffer {
  const buffer = Buffer.alloc(4096);
  const size = codec.encodeTable(buffer, table, 0);
  return buffer.subarray(4, size); // without the table's own length prefix, as decodeFields receives it
}

/** A py-amqp style table entry: short key, tag, payload. */
function entry(key: string, tag: string, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from([key.length]), Buffer.from(key), Buffer.from(tag), payload]);
}

function int64(value: bigint): Buffer {
  const buffer = Buffer.alloc(8);
  buffer.writeBigInt64BE(value);
  return buffer;
}

describe('field tables as py-amqp writes and reads them', () => {
  it('is installed as amqplib’s decoder (amqplib was loaded through kq)', () => {
    expect(tolerantFieldTables).toBe(true);
    expect(decodesWithThisCopy).toBe(true); // so deliveries take the decoder's record of tables to convert
  });

  it('tags integers I (signed 32) or l, floats d, and never b or s, which py-amqp misreads', () => {
    const wire = encode(toFieldTable({ small: 3, neg: -5, short: 200, int: 70_000, big: 2 ** 40, float: 1.5, bool: true, nil: null }));
    const tags = new Map<string, string>();
    let offset = 0;
    while (offset < wire.length) {
      const keyLength = wire[offset] as number;
      const key = wire.toString('utf8', offset + 1, offset + 1 + keyLength);
      const tag = String.fromCharCode(wire[offset + 1 + keyLength] as number);
      tags.set(key, tag);
      const sizes: Record<string, number> = { I: 4, l: 8, d: 8, t: 1, V: 0 };
      offset += 1 + keyLength + 1 + (sizes[tag] ?? 0);
    }
    expect(Object.fromEntries(tags)).toEqual({ small: 'I', neg: 'I', short: 'I', int: 'I', big: 'l', float: 'd', bool: 't', nil: 'V' });
  });

  it('sends a negative integer beyond 32 bits as a double (py-amqp reads l as unsigned)', () => {
    expect(toFieldTable({ n: -(2 ** 40) })).toEqual({ n: { '!': 'double', value: -(2 ** 40) } });
  });

  it('round-trips nested tables, arrays, dates and bytes', () => {
    const date = new Date('2026-01-02T03:04:05Z');
    const input = {
      list: [1, 'a', null, true, 2.25, [3]],
      nested: { deeper: { n: -7, s: 'ü' } },
      when: date,
      bytes: Buffer.from([0, 255, 1]),
      timelimit: [null, null],
    };
    const decoded = fromFieldTable(decodeFieldTable(encode(toFieldTable(input))));
    expect(decoded).toEqual({ ...input, bytes: Buffer.from([0, 255, 1]) });
    expect((decoded['when'] as Date).getTime()).toBe(date.getTime());
  });

  it('converts dates wherever the decoder met them: only in an array, only in a nested table, beside plain arrays', () => {
    const date = new Date('2026-01-02T03:04:05Z');
    const inArray = { list: ['a', [date]] };
    expect(fromFieldTable(decodeFieldTable(encode(toFieldTable(inArray))))).toEqual(inArray);
    const inTable = { plain: 1, nested: { deeper: { when: date } } };
    expect(fromFieldTable(decodeFieldTable(encode(toFieldTable(inTable))))).toEqual(inTable);
    const besides = { when: date, after: [1, 'b'] };
    expect(fromFieldTable(decodeFieldTable(encode(toFieldTable(besides))))).toEqual(besides);
  });

  it('decodes py-amqp’s L (signed 64) and U (signed 16) instead of closing the connection', () => {
    const table = Buffer.concat([
      entry('big', 'L', int64(1_700_000_000_000n)),
      entry('neg', 'L', int64(-(2n ** 40n))),
      entry('u', 'U', Buffer.from([0xff, 0xfe])),
      entry('after', 'S', Buffer.concat([Buffer.from([0, 0, 0, 2]), Buffer.from('ok')])),
    ]);
    expect(decodeFieldTable(table)).toEqual({ big: 1_700_000_000_000, neg: -(2 ** 40), u: -2, after: 'ok' });
  });

  it('keeps a value with an unknown tag as bytes rather than failing the frame', () => {
    const inner = Buffer.concat([entry('fine', 'I', Buffer.from([0, 0, 0, 9])), entry('odd', 'Z', Buffer.from([1, 2, 3]))]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(inner.length);
    const table = Buffer.concat([entry('nested', 'F', Buffer.concat([length, inner])), entry('next', 't', Buffer.from([1]))]);
    const decoded = decodeFieldTable(table);
    expect(decoded['next']).toBe(true);
    expect((decoded['nested'] as Record<string, unknown>)['fine']).toBe(9);
    expect(Buffer.isBuffer((decoded['nested'] as Record<string, unknown>)['odd'])).toBe(true);
  });

  it('survives a truncated table', () => {
    const table = entry('s', 'S', Buffer.from([0, 0, 0, 50, 65]));
    expect(() => decodeFieldTable(table)).not.toThrow();
    expect(Buffer.isBuffer(decodeFieldTable(table)['s'])).toBe(true);
  });

  it('turns AMQP timestamps into Dates and py-amqp decimals (signed digits) into numbers', () => {
    expect(fromFieldTable({ t: { '!': 'timestamp', value: 10 } })).toEqual({ t: new Date(10_000) });
    expect(fromFieldTable({ d: { '!': 'decimal', value: { places: 2, digits: 2 ** 32 - 150 } } })).toEqual({ d: -1.5 });
  });
});
