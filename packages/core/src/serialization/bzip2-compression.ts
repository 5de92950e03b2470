import { MessageTooLarge, OptionalDependencyMissing } from '../errors';
import type { CompressionMethod } from './compression';

/** compressjs writes its output a byte at a time into whatever has `writeByte`. */
interface ByteSink {
  writeByte(byte: number): void;
}

interface Bzip2Module {
  Bzip2: {
    compressFile(data: Uint8Array): ArrayLike<number>;
    decompressFile(data: Uint8Array, output?: ByteSink): ArrayLike<number> | ByteSink;
  };
}

/** Collects inflated bytes, refusing (before allocating) any past `limit`: a bzip2 bomb stops at the limit. */
class BoundedSink implements ByteSink {
  #buffer = Buffer.allocUnsafe(16 * 1024);
  #length = 0;

  constructor(readonly limit: number) {}

  writeByte(byte: number): void {
    if (this.#length >= this.#buffer.length) {
      if (this.#length >= this.limit) throw new MessageTooLarge(this.limit + 1, this.limit, true);
      const grown = Buffer.allocUnsafe(Math.min(this.#buffer.length * 2, this.limit));
      this.#buffer.copy(grown, 0, 0, this.#length);
      this.#buffer = grown;
    }
    this.#buffer[this.#length++] = byte;
  }

  bytes(): Buffer {
    return Buffer.from(this.#buffer.subarray(0, this.#length));
  }
}

let loading: Promise<CompressionMethod> | undefined;

/**
 * bzip2 compression (`application/x-bz2`, kombu's `bzip2`), byte-compatible with Python's `bz2` module. Node has no
 * bzip2 in zlib, so it comes from the optional peer dependency `compressjs` (pure JavaScript), imported on first use.
 */
export function loadBzip2Compression(): Promise<CompressionMethod> {
  loading ??= import('compressjs').then(
    (module: unknown): CompressionMethod => {
      const { Bzip2 } = ((module as { default?: Bzip2Module }).default ?? module) as Bzip2Module;
      return {
        contentType: 'application/x-bz2',
        compress: (body) => Buffer.from(Bzip2.compressFile(body)),
        decompress: (body, maxOutputLength) => {
          if (maxOutputLength === undefined) return Buffer.from(Bzip2.decompressFile(body) as ArrayLike<number>);
          const sink = new BoundedSink(maxOutputLength);
          Bzip2.decompressFile(body, sink);
          return sink.bytes();
        },
      };
    },
    (error: unknown) => {
      loading = undefined;
      throw new OptionalDependencyMissing('compressjs', 'bzip2 compression', { cause: error });
    },
  );
  return loading;
}
