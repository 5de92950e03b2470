import { MessageTooLarge, OptionalDependencyMissing } from '../errors';
import type { CompressionMethod } from './compression';

/** compressjs writes its output a byte at a time into whatever has `writeByte`. */
interface ByteSink {
  writeByte(byte: number): void;
}

interface Bzip2Module {
  Bzip2: {
    compressFile(data: Uint8Array): ArrayLike<number>;
    decompressFile(data: Bzip2Input, output?: ByteSink): ArrayLike<number> | ByteSink;
  };
}

/**
 * The compressed bytes as compressjs reads them. Its decoder stops without a word when the input runs out where a
 * block would start, so a stream cut before its end-of-stream marker (and the CRC of the whole stream after it) came
 * back as the blocks before the cut, and a header alone as an empty body, where Python's bz2 raises EOFError. It asks
 * `eof()` there and nowhere else (a whole stream ends on its marker, read before any such question): an input found
 * ended when asked was cut short.
 */
class Bzip2Input {
  readonly #bytes: Uint8Array;
  #at = 0;
  /** The decoder found the input ended where the next block or the end-of-stream marker should have been. */
  cut = false;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  readByte(): number {
    return this.#at < this.#bytes.length ? (this.#bytes[this.#at++] as number) : -1; // compressjs's Stream.EOF
  }

  read(into: Uint8Array, offset: number, length: number): number {
    const count = Math.max(0, Math.min(length, this.#bytes.length - this.#at));
    into.set(this.#bytes.subarray(this.#at, this.#at + count), offset);
    this.#at += count;
    return count;
  }

  tell(): number {
    return this.#at;
  }

  eof(): boolean {
    if (this.#at < this.#bytes.length) return false;
    this.cut = true;
    return true;
  }
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
          const input = new Bzip2Input(body);
          let inflated: Buffer;
          if (maxOutputLength === undefined) inflated = Buffer.from(Bzip2.decompressFile(input) as ArrayLike<number>);
          else {
            const sink = new BoundedSink(maxOutputLength);
            Bzip2.decompressFile(input, sink);
            inflated = sink.bytes();
          }
          if (input.cut) throw new Error('the bzip2 stream ends before its end-of-stream marker: it was cut short');
          return inflated;
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
