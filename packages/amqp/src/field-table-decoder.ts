/**
 * A field-table decoder that understands every tag a real peer sends and never throws.
 *
 * amqplib 2.3's decoder throws on tags it does not know, and the throw happens while it parses a frame, so the
 * whole connection is closed — and the message, still unacknowledged, is redelivered to kill the next connection
 * too. py-amqp (Python Kombu/Celery) writes every integer outside the signed 32-bit range with the tag `L`
 * (signed 64), which amqplib does not know: one Python header such as `{"ts_ms": 1700000000000}` was enough.
 *
 * This decoder returns exactly what amqplib's returns for the tags amqplib knows (so code that reads amqplib's
 * shapes — `{'!': 'timestamp', value}` and `{'!': 'decimal', value}` — keeps working), adds py-amqp's `L` (signed
 * 64) and `U` (signed 16), and keeps a value it cannot parse as the raw bytes from that point on (under the
 * same key) instead of failing.
 *
 * It runs for every delivery (a Celery task message carries some twenty headers), so it avoids per-value work:
 * keys come from an interning cache (see `KeyCache`), tags are dispatched on their byte, nested tables are read in
 * place rather than from a sub-buffer, and nothing is recorded per table unless it holds a tagged value.
 */

import { KeyCache } from './key-cache';

type FieldValue = unknown;

/**
 * Tables (and arrays) this decoder made that hold a tagged value (`{'!': 'timestamp' | 'decimal'}`) at any depth.
 * Only those are recorded (rare: Celery sends none), so `fromDecodedFieldTable` knows without walking a table
 * whether it has anything to convert.
 */
const tablesHoldingTagged = new WeakSet<object>();

/** For a table (or array) this decoder made: whether a tagged value is in it, at any depth. */
export function decodedHoldsTagged(table: object): boolean {
  return tablesHoldingTagged.has(table);
}

interface BufferWithSlices {
  utf8Slice(start: number, end: number): string;
}

// Buffer#toString normalises its arguments and looks the encoding up on every call; a Celery message has some forty
// short strings in its headers, so the native slice is called directly where Node has it (all supported versions).
const utf8Slice: (buffer: Buffer, start: number, end: number) => string =
  typeof (Buffer.prototype as unknown as Partial<BufferWithSlices>).utf8Slice === 'function'
    ? (buffer, start, end) => (buffer as unknown as BufferWithSlices).utf8Slice(start, end)
    : (buffer, start, end) => buffer.toString('utf8', start, end);

const keys = new KeyCache(utf8Slice);

/** Thrown internally when a value's tag is unknown: its length is unknowable, so the rest of its table is too. */
class UnknownTag extends Error {
  constructor(readonly tag: string) {
    super(`Unknown field-table value tag ${JSON.stringify(tag)}`);
  }
}

/** Thrown internally when a value or key runs past the end of its table. */
class Truncated extends Error {}

// The decoder's position and tagged flag. Decoding is synchronous and never re-entered, so module state replaces a
// cursor object per table.
let offset = 0;
/** Set when a tagged value was read in the table (or array) being read, or one nested in it. */
let tagged = false;

export function decodeFieldTable(slice: Buffer): Record<string, FieldValue> {
  offset = 0;
  tagged = false;
  return readTable(slice, slice.length);
}

/** Reads the table entries from `offset` up to `end`; leaves `offset` at `end`. */
function readTable(slice: Buffer, end: number): Record<string, FieldValue> {
  const fields: Record<string, FieldValue> = {};
  const outer = tagged;
  tagged = false;
  let key = '';
  /** Where the unreadable part starts if something fails: the entry, or its value once the key is read. */
  let restStart = offset;
  try {
    while (offset < end) {
      restStart = offset;
      key = '';
      const keyLength = slice[offset] as number;
      const keyStart = offset + 1;
      offset = keyStart + keyLength;
      if (offset > end) throw new Truncated();
      key = keys.get(slice, keyStart, keyLength);
      restStart = offset;
      fields[key] = readValue(slice, end);
    }
  } catch {
    // The rest of this table cannot be located; keep its bytes rather than lose the message or the connection.
    fields[key === '' ? '__undecodable__' : key] = Buffer.from(slice.subarray(restStart, end));
    offset = end;
  }
  if (tagged) tablesHoldingTagged.add(fields);
  tagged ||= outer;
  return fields;
}

function readArray(slice: Buffer, end: number): FieldValue[] {
  const values: FieldValue[] = [];
  const outer = tagged;
  tagged = false;
  while (offset < end) {
    const valueStart = offset;
    try {
      values.push(readValue(slice, end));
    } catch {
      values.push(Buffer.from(slice.subarray(valueStart, end)));
      offset = end;
    }
  }
  if (tagged) tablesHoldingTagged.add(values);
  tagged ||= outer;
  return values;
}

/** The length-prefixed payload at `offset`: returns where it starts and moves `offset` past it. */
function readSized(slice: Buffer, end: number): number {
  if (offset + 4 > end) throw new Truncated();
  const length = slice.readUInt32BE(offset);
  const start = offset + 4;
  if (start + length > end) throw new Truncated();
  offset = start + length;
  return start;
}

/** Reads the value whose tag is at `offset` (within a table or array ending at `end`). */
function readValue(slice: Buffer, end: number): FieldValue {
  if (offset >= end) throw new Truncated();
  const tag = slice[offset] as number;
  const at = offset + 1;
  offset = at;
  switch (tag) {
    case 0x53: {
      // S: long string
      const start = readSized(slice, end);
      return utf8Slice(slice, start, offset);
    }
    case 0x78: {
      // x: byte array (a view, as amqplib returns it)
      const start = readSized(slice, end);
      return slice.subarray(start, offset);
    }
    case 0x46: {
      // F: nested table
      const start = readSized(slice, end);
      const tableEnd = offset;
      offset = start;
      return readTable(slice, tableEnd);
    }
    case 0x41: {
      // A: array
      const start = readSized(slice, end);
      const arrayEnd = offset;
      offset = start;
      return readArray(slice, arrayEnd);
    }
    case 0x74: // t: boolean
      offset = fixed(at, 1, end);
      return slice[at] !== 0;
    case 0x56: // V: void
      return null;
    case 0x62: // b: signed 8
      offset = fixed(at, 1, end);
      return slice.readInt8(at);
    case 0x42: // B: unsigned 8
      offset = fixed(at, 1, end);
      return slice[at] as number;
    case 0x73: // s: signed 16
    case 0x55: // U: py-amqp's name for a signed 16-bit int
      offset = fixed(at, 2, end);
      return slice.readInt16BE(at);
    case 0x75: // u: unsigned 16
      offset = fixed(at, 2, end);
      return slice.readUInt16BE(at);
    case 0x49: // I: signed 32
      offset = fixed(at, 4, end);
      return slice.readInt32BE(at);
    case 0x69: // i: unsigned 32
      offset = fixed(at, 4, end);
      return slice.readUInt32BE(at);
    case 0x6c: // l: signed 64 (RabbitMQ and amqplib)
    case 0x4c: // L: py-amqp writes ints beyond 32 bits as signed 64
      offset = fixed(at, 8, end);
      return Number(slice.readBigInt64BE(at));
    case 0x66: // f: float
      offset = fixed(at, 4, end);
      return slice.readFloatBE(at);
    case 0x64: // d: double
      offset = fixed(at, 8, end);
      return slice.readDoubleBE(at);
    case 0x54: // T: timestamp, whole seconds
      offset = fixed(at, 8, end);
      tagged = true;
      return { '!': 'timestamp', value: Number(slice.readBigUInt64BE(at)) };
    case 0x44: {
      // D: decimal
      offset = fixed(at, 5, end);
      tagged = true;
      return { '!': 'decimal', value: { places: slice[at] as number, digits: slice.readUInt32BE(at + 1) } };
    }
    default:
      offset = at - 1;
      throw new UnknownTag(String.fromCharCode(tag));
  }
}

/** Where a fixed-size value of `size` bytes at `at` ends; throws if that is past the table's end. */
function fixed(at: number, size: number, end: number): number {
  const next = at + size;
  if (next > end) throw new Truncated();
  return next;
}
