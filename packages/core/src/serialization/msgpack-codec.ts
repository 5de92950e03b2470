import { DecodeError, EncodeError, OptionalDependencyMissing } from '../errors';
import { asBuffer, bodyPreview, type Codec } from './codec';
import type * as MsgpackNamespace from '@msgpack/msgpack';

type MsgpackModule = typeof MsgpackNamespace;

let loading: Promise<Codec> | undefined;

/**
 * The msgpack serializer (`application/x-msgpack`, `binary`), compatible with kombu's
 * `msgpack.packb(use_bin_type=True)` / `unpackb(raw=False)`: strings are msgpack str, bytes are bin.
 *
 * `@msgpack/msgpack` is an optional peer dependency, so it is imported on first use; when it is not installed this
 * rejects with `OptionalDependencyMissing`. Decoded bin values are `Uint8Array` views into the body (no copy).
 */
export function loadMsgpackCodec(): Promise<Codec> {
  loading ??= import('@msgpack/msgpack').then(createMsgpackCodec, (error: unknown) => {
    loading = undefined; // let a later call retry, e.g. after the package was installed in a long-lived REPL
    throw new OptionalDependencyMissing('@msgpack/msgpack', 'The msgpack serializer', { cause: error });
  });
  return loading;
}

function createMsgpackCodec(msgpack: MsgpackModule): Codec {
  // Reused instances avoid per-message setup; both are safe to reuse between (non-nested) calls.
  const encoder = new msgpack.Encoder();
  const decoder = new msgpack.Decoder();
  return {
    name: 'msgpack',
    contentType: 'application/x-msgpack',
    contentEncoding: 'binary',
    encode(value: unknown): Buffer {
      try {
        return asBuffer(encoder.encode(value));
      } catch (error) {
        throw new EncodeError(`Cannot serialize the value as msgpack: ${messageOf(error)}`, { cause: error });
      }
    },
    decode(body: Buffer): unknown {
      try {
        return decoder.decode(body);
      } catch (error) {
        throw new DecodeError(`Cannot decode an application/x-msgpack body: ${messageOf(error)}. Body: ${bodyPreview(body)}`, {
          cause: error,
        });
      }
    },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
