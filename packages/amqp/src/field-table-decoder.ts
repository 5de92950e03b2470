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
 */

type FieldValue = unknown;

/**
 * Tables (and arrays) this decoder made, each with whether it holds a tagged value (`{'!': 'timestamp' |
 * 'decimal'}`) at any depth: `fromFieldTable` then knows without walking a table whether it has anything to convert.
 */
const holdsTaggedByTable = new WeakMap<object, boolean>();

/** For a table this decoder made: whether a tagged value is in it. `undefined` for any other object. */
export function decodedHoldsTagged(table: object): boolean | undefined {
  return holdsTaggedByTable.get(table);
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

/** Thrown internally when a value's tag is unknown: its length is unknowable, so the rest of its table is too. */
class UnknownTag extends Error {
  constructor(readonly tag: string) {
    super(`Unknown field-table value tag ${JSON.stringify(tag)}`);
  }
}

interface Cursor {
  offset: number;
  /** Set when a tagged value was read (in this table or one nested in it). */
  tagged: boolean;
}

export function decodeFieldTable(slice: Buffer): Record<string, FieldValue> {
  const cursor: Cursor = { offset: 0, tagged: false };
  return readTable(slice, cursor);
}

function readTable(slice: Buffer, cursor: Cursor): Record<string, FieldValue> {
  const fields: Record<string, FieldValue> = {};
  const length = slice.length;
  while (cursor.offset < length) {
    let key = '';
    const start = cursor.offset;
    try {
      const keyLength = slice[cursor.offset] as number;
      cursor.offset += 1;
      if (cursor.offset + keyLength > length) throw new RangeError('field-table key runs past the end of the table');
      key = utf8Slice(slice, cursor.offset, cursor.offset + keyLength);
      cursor.offset += keyLength;
      fields[key] = readValue(slice, cursor);
    } catch {
      // The rest of this table cannot be located; keep its bytes rather than lose the message or the connection.
      fields[key === '' ? '__undecodable__' : key] = Buffer.from(slice.subarray(key === '' ? start : cursor.offset));
      break;
    }
  }
  holdsTaggedByTable.set(fields, cursor.tagged);
  return fields;
}

function readArray(slice: Buffer, cursor: Cursor, end: number): FieldValue[] {
  const values: FieldValue[] = [];
  // The array's own flag: what the table around it read before does not count for it.
  const outer = cursor.tagged;
  cursor.tagged = false;
  while (cursor.offset < end) {
    try {
      values.push(readValue(slice, cursor));
    } catch {
      values.push(Buffer.from(slice.subarray(cursor.offset, end)));
      cursor.offset = end;
    }
  }
  holdsTaggedByTable.set(values, cursor.tagged);
  cursor.tagged ||= outer;
  return values;
}

function readValue(slice: Buffer, cursor: Cursor): FieldValue {
  if (cursor.offset >= slice.length) throw new RangeError('a field-table value runs past the end of the table');
  const tag = String.fromCharCode(slice[cursor.offset] as number);
  cursor.offset += 1;
  const at = cursor.offset;
  switch (tag) {
    case 'S': {
      const length = slice.readUInt32BE(at);
      cursor.offset = at + 4 + length;
      if (cursor.offset > slice.length) throw new RangeError('long string runs past the end of the table');
      return utf8Slice(slice, at + 4, cursor.offset);
    }
    case 'x': {
      const length = slice.readUInt32BE(at);
      cursor.offset = at + 4 + length;
      if (cursor.offset > slice.length) throw new RangeError('byte array runs past the end of the table');
      return slice.subarray(at + 4, cursor.offset);
    }
    case 'F': {
      const length = slice.readUInt32BE(at);
      cursor.offset = at + 4 + length;
      if (cursor.offset > slice.length) throw new RangeError('nested table runs past the end of the table');
      const nested: Cursor = { offset: 0, tagged: false };
      const table = readTable(slice.subarray(at + 4, cursor.offset), nested);
      if (nested.tagged) cursor.tagged = true;
      return table;
    }
    case 'A': {
      const length = slice.readUInt32BE(at);
      const end = at + 4 + length;
      if (end > slice.length) throw new RangeError('array runs past the end of the table');
      cursor.offset = at + 4;
      return readArray(slice, cursor, end);
    }
    case 'b':
      cursor.offset = at + 1;
      return slice.readInt8(at);
    case 'B':
      cursor.offset = at + 1;
      return slice.readUInt8(at);
    case 's':
    case 'U': // py-amqp's name for a signed 16-bit int
      cursor.offset = at + 2;
      return slice.readInt16BE(at);
    case 'u':
      cursor.offset = at + 2;
      return slice.readUInt16BE(at);
    case 'I':
      cursor.offset = at + 4;
      return slice.readInt32BE(at);
    case 'i':
      cursor.offset = at + 4;
      return slice.readUInt32BE(at);
    case 'l':
    case 'L': // py-amqp writes ints beyond 32 bits as 'L' (signed 64); RabbitMQ and amqplib use 'l'
      cursor.offset = at + 8;
      return Number(slice.readBigInt64BE(at));
    case 'f':
      cursor.offset = at + 4;
      return slice.readFloatBE(at);
    case 'd':
      cursor.offset = at + 8;
      return slice.readDoubleBE(at);
    case 't':
      cursor.offset = at + 1;
      return slice.readUInt8(at) !== 0;
    case 'V':
      return null;
    case 'T':
      cursor.offset = at + 8;
      cursor.tagged = true;
      return { '!': 'timestamp', value: Number(slice.readBigUInt64BE(at)) };
    case 'D': {
      const places = slice.readUInt8(at);
      const digits = slice.readUInt32BE(at + 1);
      cursor.offset = at + 5;
      cursor.tagged = true;
      return { '!': 'decimal', value: { places, digits } };
    }
    default:
      cursor.offset = at - 1;
      throw new UnknownTag(tag);
  }
}
