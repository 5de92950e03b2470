import { ContentDisallowed, EncodeError, KqError, DecodeError, SerializerNotRegistered } from '../errors';
import { AUTH_SERIALIZER, type Codec } from './codec';
import { compress, decompress, hasCompression, registerCompression } from './compression';
import { jsonCodec } from './json-codec';
import { loadBzip2Compression } from './bzip2-compression';
import { loadMsgpackCodec } from './msgpack-codec';
import { loadYamlCodec } from './yaml-codec';
import { rawCodec } from './raw-codec';

/** An encoded message body and the properties that describe it. */
export interface EncodedBody {
  body: Buffer;
  contentType: string;
  contentEncoding: string;
  /** The `compression` header value, when the body was compressed. */
  compression?: string;
}

/** What {@link SerializerRegistry.decode} needs from a received message. */
export interface EncodedMessage {
  body: Buffer;
  /** Missing or empty means raw data (`application/data`), as in kombu. */
  contentType?: string;
  contentEncoding?: string;
  compression?: string;
}

export interface DecodeOptions {
  /**
   * Content types that may be decoded, as serializer names (`json`) or content types (`application/json`). Anything
   * else is refused with `ContentDisallowed` before the body is decompressed or parsed. Absent = accept everything.
   */
  accept?: readonly string[];
  /** Most bytes a compressed body may inflate to (`maxMessageSize`); past it, `MessageTooLarge`. Default 512 MiB. */
  maxDecompressedSize?: number;
}

/** Serializer names kombu knows, so accept lists written for Python resolve even when kq has no such codec loaded. */
const KOMBU_CONTENT_TYPES: ReadonlyMap<string, string> = new Map([
  ['json', 'application/json'],
  ['msgpack', 'application/x-msgpack'],
  ['pickle', 'application/x-python-serialize'],
  ['yaml', 'application/x-yaml'],
  ['raw', 'application/data'],
]);

/** Kombu's serializer names by content type. */
const KOMBU_NAMES: ReadonlyMap<string, string> = new Map([...KOMBU_CONTENT_TYPES].map(([name, contentType]) => [contentType, name]));

/** The serializers `enable` loads, with the optional package each needs. */
const OPTIONAL_PACKAGES: ReadonlyMap<string, string> = new Map([
  ['msgpack', '@msgpack/msgpack'],
  ['yaml', 'yaml'],
]);

const RAW_CONTENT_TYPE = 'application/data';
const PICKLE_CONTENT_TYPE = 'application/x-python-serialize';

/** Why pickled content is refused, whatever the accept list says. */
const PICKLE_REFUSED =
  'Refusing to decode pickle (application/x-python-serialize): kq cannot decode pickle, even when it is in the ' +
  "accept list. Send this task with serializer 'json' (or msgpack or yaml).";

/** Serializers by name and content type, like kombu's `kombu.serialization.registry`. */
export class SerializerRegistry {
  readonly #byName = new Map<string, Codec>();
  readonly #byContentType = new Map<string, Codec>();

  /** Registers (or replaces) a codec under its name, its content type and `aliases`. */
  register(codec: Codec, aliases: readonly string[] = []): void {
    this.#byName.set(codec.name, codec);
    for (const alias of aliases) this.#byName.set(alias, codec);
    this.#byContentType.set(codec.contentType, codec);
  }

  has(nameOrContentType: string): boolean {
    return this.#find(nameOrContentType) !== undefined;
  }

  /** The codec registered under a name or content type; throws `SerializerNotRegistered` otherwise. */
  codec(nameOrContentType: string): Codec {
    const codec = this.#find(nameOrContentType);
    if (codec === undefined) throw this.#notRegistered(nameOrContentType);
    return codec;
  }

  /** Serializes `value` (default serializer `json`), then compresses it if `options.compression` names a method. */
  encode(value: unknown, serializer = 'json', options: { compression?: string } = {}): EncodedBody {
    const codec = this.codec(serializer);
    let body: Buffer;
    try {
      body = codec.encode(value);
    } catch (error) {
      if (error instanceof KqError) throw error;
      throw new EncodeError(`The ${codec.name} serializer failed: ${messageOf(error)}`, { cause: error });
    }
    const encoded: EncodedBody = { body, contentType: codec.contentType, contentEncoding: codec.contentEncoding };
    if (options.compression) {
      const compressed = compress(body, options.compression);
      encoded.body = compressed.body;
      encoded.compression = compressed.compression;
    }
    return encoded;
  }

  /**
   * Decodes a received body by its content type, after checking it against `accept` and decompressing it.
   *
   * Like kombu: a missing content type means raw bytes (`application/data`), and an empty body is returned as it is
   * without decoding. Unlike kombu, which always trusts `application/data` and decompresses before the accept check,
   * the accept list is applied to raw data too and is checked first, so refused content is never inflated.
   */
  decode(message: EncodedMessage, options: DecodeOptions = {}): unknown {
    const contentType = message.contentType || RAW_CONTENT_TYPE;
    const { accept } = options;
    if (accept !== undefined && !this.#accepts(accept, contentType)) throw new ContentDisallowed(contentType, accept, this.#unsignedRefusal(accept, contentType));
    const codec = this.#byContentType.get(contentType);
    // Accepted or not, pickle is refused as content (Kombu's ContentDisallowed), not as a broken body: kq has no
    // unpickler (nor should it run Python's), and a caller waiting on the task learns why from that error.
    if (codec === undefined && contentType === PICKLE_CONTENT_TYPE) throw new ContentDisallowed(contentType, accept ?? [], PICKLE_REFUSED);
    const body = message.compression ? decompress(message.body, message.compression, options.maxDecompressedSize) : message.body;
    if (body.length === 0) return body;
    if (codec === undefined) {
      if (contentType === RAW_CONTENT_TYPE) return body;
      throw this.#notRegistered(contentType);
    }
    try {
      return codec.decode(body);
    } catch (error) {
      if (error instanceof KqError) throw error;
      throw new DecodeError(`The ${codec.name} serializer failed to decode a ${contentType} body: ${messageOf(error)}`, {
        cause: error,
      });
    }
  }

  /**
   * Throws the `ContentDisallowed` that `decode` would for content outside `accept`, without reading the body: a
   * receiver that decodes a body only when it needs it still refuses disallowed content on receipt.
   */
  assertAccepted(contentType: string, accept: readonly string[]): void {
    const type = contentType || RAW_CONTENT_TYPE;
    if (!this.#accepts(accept, type)) throw new ContentDisallowed(type, accept, this.#unsignedRefusal(accept, type));
  }

  /** Loads the optional `@msgpack/msgpack` package and registers the `msgpack` serializer. */
  async enableMsgpack(): Promise<void> {
    if (this.#byName.has('msgpack')) return;
    this.register(await loadMsgpackCodec());
  }

  /**
   * Loads what the named serializers and compression methods need (names or content types, as in an accept list):
   * `msgpack`, `yaml` and `bzip2` come from optional packages, so an app that names them in `acceptContent`,
   * `taskSerializer` or `taskCompression` works with no other call. Names kq cannot load (`pickle`) are left alone:
   * their content is refused when it arrives.
   */
  async enable(names: readonly (string | null | undefined)[]): Promise<void> {
    const wanted = new Set(names.filter((name): name is string => typeof name === 'string'));
    const loads: Promise<void>[] = [];
    if ((wanted.has('msgpack') || wanted.has('application/x-msgpack')) && !this.#byName.has('msgpack')) loads.push(this.enableMsgpack());
    if ((wanted.has('yaml') || wanted.has('application/x-yaml')) && !this.#byName.has('yaml')) {
      loads.push(loadYamlCodec().then((codec) => this.register(codec)));
    }
    if ((wanted.has('bzip2') || wanted.has('bzip') || wanted.has('application/x-bz2')) && !hasCompression('application/x-bz2')) {
      loads.push(loadBzip2Compression().then((method) => registerCompression(method, ['bzip2', 'bzip'])));
    }
    await Promise.all(loads);
  }

  /** Throws `SerializerNotRegistered` for an accept list naming an unknown serializer (check configuration early). */
  assertAcceptList(accept: readonly string[]): void {
    this.#accepts(accept, '');
  }

  #find(nameOrContentType: string): Codec | undefined {
    return this.#byName.get(nameOrContentType) ?? this.#byContentType.get(nameOrContentType);
  }

  /** Accept entries are names or content types (anything with a `/`), as in kombu's `prepare_accept_content`. */
  #accepts(accept: readonly string[], contentType: string): boolean {
    let accepted = false;
    // Every entry is resolved (no early return) so a misspelt name fails on every message, not only some.
    for (const entry of accept) {
      const resolved = entry.includes('/')
        ? entry
        : (this.#byName.get(entry)?.contentType ?? KOMBU_CONTENT_TYPES.get(entry));
      if (resolved === undefined) {
        throw new SerializerNotRegistered(
          `Unknown serializer name ${JSON.stringify(entry)} in the accept list. Use a registered name ` +
            `(${[...this.#byName.keys()].join(', ')}) or a content type such as "application/json".`,
        );
      }
      if (resolved === contentType) accepted = true;
    }
    return accepted;
  }

  /** When only signed messages are accepted, the refusal says the message is unsigned, not "add it to accept". */
  #unsignedRefusal(accept: readonly string[], contentType: string): string | undefined {
    const signed = this.#byName.get(AUTH_SERIALIZER)?.contentType;
    if (signed === undefined || !accept.some((entry) => entry === AUTH_SERIALIZER || entry === signed)) return undefined;
    return (
      `Refusing an unsigned message (content type ${JSON.stringify(contentType)}): this consumer accepts only signed ` +
      `messages [${accept.join(', ')}]. The sender must sign it: taskSerializer 'auth' with its securityKey and ` +
      `securityCertificate (app.setupSecurity()), its certificate in this consumer's securityCertStore.`
    );
  }

  #notRegistered(nameOrContentType: string): SerializerNotRegistered {
    return new SerializerNotRegistered(
      `No serializer is registered for ${JSON.stringify(nameOrContentType)}. Registered: ` +
        `${[...this.#byName.keys()].join(', ')}.${notRegisteredHint(nameOrContentType)}`,
    );
  }
}

/** What to do about a serializer that is not registered: load the optional ones, never expect pickle. */
function notRegisteredHint(nameOrContentType: string): string {
  const name = KOMBU_NAMES.get(nameOrContentType) ?? nameOrContentType;
  const optional = OPTIONAL_PACKAGES.get(name);
  if (optional !== undefined) {
    return (
      ` Name ${JSON.stringify(name)} in the app's acceptContent or taskSerializer (loaded at start-up), or call ` +
      `\`await registry.enable([${JSON.stringify(name)}])\` first; it needs the ${optional} package.`
    );
  }
  if (name === 'pickle') return ' kq cannot encode or decode pickle (Python objects); use json, msgpack or yaml.';
  return '';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The shared registry with `json` and `raw` registered; `msgpack` is added by `defaultSerializers.enableMsgpack()`. */
export const defaultSerializers: SerializerRegistry = new SerializerRegistry();
defaultSerializers.register(jsonCodec);
defaultSerializers.register(rawCodec);
