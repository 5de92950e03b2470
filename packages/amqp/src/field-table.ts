/**
 * Header and argument tables as Python peers write and read them.
 *
 * amqplib picks the smallest integer tag that fits (`b`, `s`, `I`, `l`), but py-amqp (Kombu, Celery) reads `b` as
 * *unsigned* and `s` as a *short string*: a header `retries: 200` encoded by plain amqplib arrives in Python as a
 * corrupt table. So every value is tagged here the way py-amqp writes it (docs/wire.md#amqp-rabbitmq): str→`S`,
 * bool→`t`, float→`d`, int→`I` (signed 32), larger positive int→`l` (py-amqp and RabbitMQ read it as 64-bit), null→`V`,
 * list→`A`, dict→`F`, Date→`T` (seconds), Buffer→`x`. JavaScript has one number type, so an integral float such as
 * `5.0` is sent as the int 5; a negative integer below -2^31 is sent as a double (py-amqp would read a negative `l` as
 * a huge unsigned number).
 */

import { decodedHoldsTagged } from './field-table-decoder';

type Tagged = { '!': string; value: unknown };
export type FieldTable = Record<string, unknown>;

const INT32_MAX = 0x7fffffff;
const INT32_MIN = -0x80000000;
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/** Tags every value of a header or argument table for amqplib's encoder. `undefined` entries are left out. */
export function toFieldTable(table: Readonly<Record<string, unknown>>): FieldTable {
  const out: FieldTable = {};
  for (const key of Object.keys(table)) {
    const value = table[key];
    if (value !== undefined) out[key] = toFieldValue(value);
  }
  return out;
}

function toFieldValue(value: unknown): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return taggedNumber(value);
    case 'bigint':
      return value >= INT64_MIN && value <= INT64_MAX ? { '!': 'long', value } : { '!': 'double', value: Number(value) };
    case 'undefined':
      return null;
    case 'object':
      break;
    default:
      // Functions and symbols have no wire form; their text is the least surprising thing to send.
      return String(value);
  }
  if (value === null) return null;
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof Date) return { '!': 'timestamp', value: Math.max(0, Math.floor(value.getTime() / 1000)) };
  if (Array.isArray(value)) return value.map(toFieldValue);
  if (isTagged(value)) return value; // an explicit amqplib type, e.g. { '!': 'float', value: 1.5 }
  // amqplib reads any object with a '!' key as a type tag: a table that merely has one is sent as an explicit table.
  if (Object.hasOwn(value, '!')) return { '!': 'object', value: toFieldTable(value as Record<string, unknown>) };
  return toFieldTable(value as Record<string, unknown>);
}

function taggedNumber(value: number): Tagged {
  if (Number.isInteger(value)) {
    if (value >= INT32_MIN && value <= INT32_MAX) return { '!': 'int', value };
    if (value > 0 && Number.isSafeInteger(value)) return { '!': 'long', value };
  }
  return { '!': 'double', value };
}

/** The type names amqplib's encoder knows (its `encodeFieldValue` switch). */
const AMQPLIB_TYPES = new Set([
  'string', 'object', 'boolean', 'double', 'float64', 'byte', 'int8', 'unsignedbyte', 'uint8', 'short', 'int16', 'unsignedshort',
  'uint16', 'int', 'int32', 'unsignedint', 'uint32', 'long', 'int64', 'timestamp', 'float', 'decimal',
]);

function isTagged(value: object): value is Tagged {
  const keys = Object.keys(value);
  const tag = (value as Tagged)['!'];
  return keys.length === 2 && keys.includes('!') && keys.includes('value') && typeof tag === 'string' && AMQPLIB_TYPES.has(tag);
}

/**
 * Turns a decoded table into plain values: AMQP timestamps become `Date`s, decimals become numbers (py-amqp writes
 * the digits signed), byte arrays stay `Buffer`s.
 */
export function fromFieldTable(table: Readonly<Record<string, unknown>>): FieldTable {
  // Most tables hold nothing to convert (no timestamps or decimals): hand back amqplib's own fresh object then.
  if (!holdsTagged(table)) return table as FieldTable;
  return convertTable(table, false);
}

/**
 * `fromFieldTable` for a table kq's decoder made (`decodeFieldTable`): the decoder recorded whether it holds a
 * tagged value, so nothing is walked to find out — the common case (no timestamps or decimals) costs one lookup.
 */
export function fromDecodedFieldTable(table: Readonly<Record<string, unknown>>): FieldTable {
  return decodedHoldsTagged(table) ? convertTable(table, true) : (table as FieldTable);
}

function convertTable(table: Readonly<Record<string, unknown>>, decoded: boolean): FieldTable {
  const out: FieldTable = {};
  for (const key of Object.keys(table)) out[key] = fromFieldValue(table[key], decoded);
  return out;
}

function holdsTagged(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value)) return false;
  if (decodedHoldsTagged(value)) return true;
  if (Array.isArray(value)) return value.some(holdsTagged);
  if (isTagged(value)) return true;
  for (const key in value) if (holdsTagged((value as Record<string, unknown>)[key])) return true;
  return false;
}

/** `decoded`: the value came from kq's decoder, which recorded every table and array holding a tagged value. */
function fromFieldValue(value: unknown, decoded: boolean): unknown {
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value)) return value;
  if (decoded && !decodedHoldsTagged(value) && !isTagged(value)) return value;
  if (Array.isArray(value)) return value.map((item) => fromFieldValue(item, decoded));
  if (isTagged(value)) {
    if (value['!'] === 'timestamp' && typeof value.value === 'number') return new Date(value.value * 1000);
    if (value['!'] === 'decimal') {
      const { places, digits } = value.value as { places: number; digits: number };
      const signed = digits > INT32_MAX ? digits - 2 ** 32 : digits;
      return signed / 10 ** places;
    }
    return value.value;
  }
  return decoded ? convertTable(value as Record<string, unknown>, true) : fromFieldTable(value as Record<string, unknown>);
}
