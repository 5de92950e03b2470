import { OptionalDependencyMissing } from '../errors';
import type { CompressionMethod } from './compression';

interface Bzip2Module {
  Bzip2: { compressFile(data: Uint8Array): ArrayLike<number>; decompressFile(data: Uint8Array): ArrayLike<number> };
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
        decompress: (body) => Buffer.from(Bzip2.decompressFile(body)),
      };
    },
    (error: unknown) => {
      loading = undefined;
      throw new OptionalDependencyMissing('compressjs', 'bzip2 compression', { cause: error });
    },
  );
  return loading;
}
