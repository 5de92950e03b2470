import { isUtf8 } from 'node:buffer';
import { DecodeError, EncodeError, KqError } from '../errors';
import { formatIsoDatetime, parseIsoDatetime } from '../iso-datetime';
import { asBuffer, bodyPreview, type Codec } from './codec';

/**
 * JSON as kombu ≥ 5.3 writes it (docs/wire.md#serializers-and-compression): values JSON has no syntax for travel as
 * `{"__type__": T, "__value__": V}`.
 *
 * Encoding: `Date` ⇒ `datetime` (ISO 8601, `+00:00`, microseconds when there are milliseconds), `Buffer`/`Uint8Array`
 * ⇒ `bytes` (the text, when the bytes are valid UTF-8) or `base64`. `BigInt`, `Map`, `Set` and other binary views are
 * refused rather than silently mangled.
 *
 * Decoding: *any* object whose keys are exactly `__type__` and `__value__` is a marker, as in kombu: `datetime` ⇒
 * `Date`, `bytes`/`base64` ⇒ `Buffer`, `uuid` ⇒ dashed lowercase string, `date`, `time`, `decimal` ⇒ their string
 * form; an unknown type is a `DecodeError`.
 *
 * Differences with Python to know about: Python writes `NaN`/`Infinity` literals, which JSON.parse rejects
 * (DecodeError), while JSON.stringify writes `null` for them; integers beyond 2**53 lose precision; datetimes keep
 * millisecond precision only; a naive datetime (no offset) is read as UTC, Celery's convention.
 */
export const jsonCodec: Codec = {
  name: 'json',
  contentType: 'application/json',
  contentEncoding: 'utf-8',
  encode(value: unknown): Buffer {
    let text: string | undefined;
    try {
      // The plain call is several times faster than one with a replacer, and most messages hold nothing special.
      text = needsReplacer(value, { budget: SCAN_BUDGET }, 0) ? JSON.stringify(value, replacer) : JSON.stringify(value);
    } catch (error) {
      if (error instanceof KqError) throw error;
      throw new EncodeError(`Cannot serialize the value as JSON: ${messageOf(error)}`, { cause: error });
    }
    if (text === undefined) {
      throw new EncodeError(`Cannot serialize ${typeof value} as JSON: there is no JSON for it. Send null instead.`);
    }
    return Buffer.from(text, 'utf8');
  },
  decode(body: Buffer): unknown {
    if (!isUtf8(body)) {
      throw new DecodeError(`Cannot decode an application/json body: it is not valid UTF-8. Body: ${bodyPreview(body)}`);
    }
    const text = body.toString('utf8');
    try {
      return needsReviver(text) ? JSON.parse(text, reviver) : JSON.parse(text);
    } catch (error) {
      if (error instanceof KqError) throw error;
      throw new DecodeError(`Cannot decode an application/json body: ${messageOf(error)}. Body: ${bodyPreview(body)}`, {
        cause: error,
      });
    }
  },
};

interface ScanState {
  budget: number;
}

/** Objects the pre-scan may visit before it gives up and lets the replacer handle the value (also stops cycles). */
const SCAN_BUDGET = 10_000;
const MAX_SCAN_DEPTH = 500;

/**
 * True when `value` may contain something plain JSON.stringify gets wrong: a bigint, or any object that is neither an
 * array nor a plain object (Date, Buffer, Map, class instances with `toJSON`...). Conservative: when unsure, true.
 */
function needsReplacer(value: unknown, state: ScanState, depth: number): boolean {
  if (typeof value !== 'object' || value === null) return typeof value === 'bigint';
  if (--state.budget < 0 || depth > MAX_SCAN_DEPTH) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item === 'object' ? item !== null && needsReplacer(item, state, depth + 1) : typeof item === 'bigint') {
        return true;
      }
    }
    return false;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return true;
  const record = value as Record<string, unknown>;
  if (typeof record.toJSON === 'function') return true;
  for (const key in record) {
    const item = record[key];
    if (typeof item === 'object' ? item !== null && needsReplacer(item, state, depth + 1) : typeof item === 'bigint') {
      return true;
    }
  }
  return false;
}

/**
 * `toJSON` (Date's, Buffer's) runs before a replacer sees the value, so the replacer looks at the holder's raw
 * property `this[key]` to find the original Date or bytes.
 */
function replacer(this: unknown, key: string, value: unknown): unknown {
  if (typeof value === 'bigint') {
    throw new EncodeError(
      `Cannot serialize the BigInt ${value}n (at key ${JSON.stringify(key)}) as JSON. ` +
        `Convert it first: Number(x) when it is within ±2**53, or String(x) otherwise.`,
    );
  }
  if (typeof value !== 'object' && typeof value !== 'string') return value;
  const raw = (this as Record<string, unknown>)[key];
  if (raw instanceof Uint8Array) return bytesMarker(asBuffer(raw));
  if (raw instanceof Date) return datetimeMarker(raw);
  if (raw === value && typeof raw === 'object' && raw !== null) {
    if (raw instanceof Map || raw instanceof Set || raw instanceof ArrayBuffer || ArrayBuffer.isView(raw)) {
      throw new EncodeError(
        `Cannot serialize a ${raw.constructor.name} (at key ${JSON.stringify(key)}) as JSON: it would become {}. ` +
          `Convert it first (Object.fromEntries(map), [...set], Buffer.from(bytes)).`,
      );
    }
  }
  return value;
}

interface Marker {
  __type__: string;
  __value__: unknown;
}

function bytesMarker(bytes: Buffer): Marker {
  // Same choice as kombu: readable text when the bytes decode as UTF-8, base64 otherwise.
  return isUtf8(bytes)
    ? { __type__: 'bytes', __value__: bytes.toString('utf8') }
    : { __type__: 'base64', __value__: bytes.toString('base64') };
}

/** Python's `datetime.isoformat()` of an aware UTC datetime: `2024-01-02T03:04:05+00:00` or `…05.123000+00:00`. */
function datetimeMarker(date: Date): Marker {
  const value = formatIsoDatetime(date);
  if (value !== undefined) return { __type__: 'datetime', __value__: value };
  if (Number.isNaN(date.getTime())) throw new EncodeError('Cannot serialize an invalid Date as JSON.');
  throw new EncodeError(`Cannot serialize the Date ${date.toISOString()}: Python datetimes only cover years 1 to 9999.`);
}

/**
 * Only parse with a reviver when a marker may be present. Besides the literal key, a key could spell `__type__` with
 * `\u00XX` escapes; Python never escapes printable ASCII, so such text is rare and merely takes the slow path.
 */
function needsReviver(text: string): boolean {
  return text.includes('"__type__"') || (text.includes('\\u') && ESCAPED_PRINTABLE_ASCII.test(text));
}

const ESCAPED_PRINTABLE_ASCII = /\\u00[2-7][0-9a-f]/i;

function reviver(this: unknown, _key: string, value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length !== 2 || !Object.hasOwn(record, '__type__') || !Object.hasOwn(record, '__value__')) return value;
  return decodeMarker(record.__type__, record.__value__);
}

function decodeMarker(type: unknown, value: unknown): unknown {
  switch (type) {
    case 'datetime':
      return parsePythonDatetime(expectString(type, value));
    case 'date':
    case 'time':
      return expectString(type, value);
    case 'decimal':
      // Kept as text: a JavaScript number would round it.
      if (typeof value === 'number') return String(value);
      return expectString(type, value);
    case 'uuid':
      return parseUuid(value);
    case 'bytes':
      return Buffer.from(expectString(type, value), 'utf8');
    case 'base64':
      return Buffer.from(expectString(type, value), 'base64');
    default:
      throw new DecodeError(
        `Unsupported JSON type marker {"__type__": ${JSON.stringify(type)}}: kq decodes datetime, date, time, decimal, ` +
          `uuid, bytes and base64. Any object whose only keys are "__type__" and "__value__" is read as a marker, as kombu does.`,
      );
  }
}

function expectString(type: string, value: unknown): string {
  if (typeof value === 'string') return value;
  throw new DecodeError(`Invalid JSON type marker ${JSON.stringify(type)}: expected a string __value__, got ${JSON.stringify(value)}.`);
}

/** Parses what Python's `datetime.isoformat()` writes (and `fromisoformat` reads); naive values are taken as UTC. */
function parsePythonDatetime(text: string): Date {
  const parsed = parseIsoDatetime(text);
  if ('date' in parsed) return parsed.date;
  throw new DecodeError(`Invalid datetime in JSON type marker: ${JSON.stringify(text)} is not an ISO 8601 datetime (${parsed.invalid}).`);
}

/** kombu writes `{"hex": "<32 hex digits>"}` (Python `uuid.UUID(**value)`); `UUID(hex=…)` also tolerates dashes, braces and a urn prefix. */
function parseUuid(value: unknown): string {
  const hex = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).hex : undefined;
  if (typeof hex === 'string') {
    const digits = hex.replace(/^urn:/i, '').replace(/^uuid:/i, '').replace(/[{}-]/g, '').toLowerCase();
    if (/^[0-9a-f]{32}$/.test(digits)) {
      return `${digits.slice(0, 8)}-${digits.slice(8, 12)}-${digits.slice(12, 16)}-${digits.slice(16, 20)}-${digits.slice(20)}`;
    }
  }
  throw new DecodeError(`Invalid uuid in JSON type marker: expected {"hex": "<32 hex digits>"}, got ${JSON.stringify(value)}.`);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
