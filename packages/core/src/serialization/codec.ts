/**
 * A serializer: turns a value into message body bytes and back. `contentType`/`contentEncoding` are what goes into
 * the message properties, e.g. `application/json` + `utf-8` (docs/wire.md#serializers-and-compression).
 */
export interface Codec {
  /** The serializer name used in configuration and accept lists (`json`, `msgpack`, `raw`). */
  readonly name: string;
  readonly contentType: string;
  readonly contentEncoding: string;
  /** Throws `EncodeError` when the value cannot be represented. */
  encode(value: unknown): Buffer;
  /** Throws `DecodeError` when the body is not valid for this content type. */
  decode(body: Buffer): unknown;
}

/** The name of Celery's message-signing serializer (`auth`, see auth-serializer.ts). */
export const AUTH_SERIALIZER = 'auth';

const PREVIEW_BYTES = 40;

/** A short, printable prefix of a body for error messages, so a log line shows what actually arrived. */
export function bodyPreview(body: Buffer): string {
  const head = JSON.stringify(body.subarray(0, PREVIEW_BYTES).toString('utf8'));
  return body.length > PREVIEW_BYTES ? `${head}… (${body.length} bytes)` : head;
}

/** A Buffer sharing the bytes of any Uint8Array (no copy). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
