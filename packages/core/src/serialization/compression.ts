import { brotliCompressSync, brotliDecompressSync, deflateSync, inflateSync } from 'node:zlib';
import { DecodeError, KqError, MessageTooLarge, SerializerNotRegistered } from '../errors';

/** A body compression method; `contentType` is the value of the message's `compression` header. */
export interface CompressionMethod {
  readonly contentType: string;
  compress(body: Buffer): Buffer;
  /**
   * Inflates `body`, stopping with {@link MessageTooLarge} once the output would pass `maxOutputLength` bytes (the
   * output is never held whole first). A method without the argument is checked only once it has inflated all.
   */
  decompress(body: Buffer, maxOutputLength?: number): Buffer;
}

const methods = new Map<string, CompressionMethod>();

/** Registers a method under its content type and aliases (replacing any previous one), like kombu's `compression.register`. */
export function registerCompression(method: CompressionMethod, aliases: readonly string[] = []): void {
  methods.set(method.contentType, method);
  for (const alias of aliases) methods.set(alias, method);
}

/** True when `method` (a name, alias or header value) is registered. */
export function hasCompression(method: string): boolean {
  return methods.has(method);
}

/** Compresses a body; `compression` is the header value to send (aliases resolve to the content type). */
export function compress(body: Buffer, method: string): { body: Buffer; compression: string } {
  const m = lookup(method);
  return { body: m.compress(body), compression: m.contentType };
}

/**
 * Decompresses a body according to its `compression` header; corrupt data is a `DecodeError`, output past
 * `maxOutputLength` bytes (default {@link MAX_DECOMPRESSED_BYTES}) a `MessageTooLarge`.
 */
export function decompress(body: Buffer, compression: string, maxOutputLength: number = MAX_DECOMPRESSED_BYTES): Buffer {
  const m = lookup(compression);
  const limit = Math.min(maxOutputLength, MAX_DECOMPRESSED_BYTES);
  try {
    const inflated = m.decompress(body, limit);
    if (inflated.length > limit) throw new MessageTooLarge(inflated.length, limit, true);
    return inflated;
  } catch (error) {
    if (error instanceof KqError) throw error;
    if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw new MessageTooLarge(limit + 1, limit, true);
    throw new DecodeError(
      `Cannot decompress a body with compression ${JSON.stringify(compression)}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

function lookup(method: string): CompressionMethod {
  const m = methods.get(method);
  if (m === undefined) {
    throw new SerializerNotRegistered(
      `No compression method ${JSON.stringify(method)} is registered. Known: ${[...methods.keys()].join(', ')}. ` +
        `Others (kombu's bz2, lzma, zstd) can be added with registerCompression().`,
    );
  }
  return m;
}

// kombu's `application/x-gzip` is a zlib stream (Python zlib.compress), not gzip
// (docs/wire.md#serializers-and-compression).
/**
 * Largest body decompression may produce: a few KiB of zlib can inflate to gigabytes, and one such message must
 * not take the worker down. 512 MiB is Celery's own result size ceiling.
 */
export const MAX_DECOMPRESSED_BYTES = 512 * 1024 * 1024;

registerCompression(
  {
    contentType: 'application/x-gzip',
    compress: (body) => deflateSync(body),
    decompress: (body, maxOutputLength = MAX_DECOMPRESSED_BYTES) => inflateSync(body, { maxOutputLength }),
  },
  ['zlib', 'gzip'],
);
// Node's brotli defaults (quality 11, window 22) are the same as Python's brotli.compress.
registerCompression(
  {
    contentType: 'application/x-brotli',
    compress: (body) => brotliCompressSync(body),
    decompress: (body, maxOutputLength = MAX_DECOMPRESSED_BYTES) => brotliDecompressSync(body, { maxOutputLength }),
  },
  ['brotli'],
);
