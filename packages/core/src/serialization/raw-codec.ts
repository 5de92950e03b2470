import { EncodeError } from '../errors';
import { asBuffer, type Codec } from './codec';

/**
 * kombu's `raw` serializer: the body is the bytes themselves (`application/data`, `binary`). A string is sent as its
 * UTF-8 bytes. (kombu labels a raw *string* `utf-8` so that Python receivers get `str` back; here the label is always
 * `binary` and decoding always returns a Buffer.)
 */
export const rawCodec: Codec = {
  name: 'raw',
  contentType: 'application/data',
  contentEncoding: 'binary',
  encode(value: unknown): Buffer {
    if (value instanceof Uint8Array) return asBuffer(value);
    if (typeof value === 'string') return Buffer.from(value, 'utf8');
    throw new EncodeError(
      `The raw serializer sends bytes or strings as they are, but got ${describe(value)}. ` +
        `Use the json serializer for structured data.`,
    );
  },
  decode(body: Buffer): Buffer {
    return body;
  },
};

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'Object'})`;
  return `a ${typeof value}`;
}
