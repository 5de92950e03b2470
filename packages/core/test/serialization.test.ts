import { describe, it, expect, vi, afterEach } from 'vitest';
import fc from 'fast-check';
import { inflateSync, deflateSync, brotliDecompressSync } from 'node:zlib';
import {
  SerializerRegistry,
  defaultSerializers,
  jsonCodec,
  rawCodec,
  loadMsgpackCodec,
  compress,
  decompress,
  hasCompression,
  loadBzip2Compression,
  type Codec,
} from '../src/serialization';
import { ContentDisallowed, DecodeError, EncodeError, MessageTooLarge, OptionalDependencyMissing, SerializerNotRegistered } from '../src/errors';

/**
 * The body captured from kombu 5.6.3: `echo.delay(datetime, b'ab', UUID(int=1), Decimal('1.5'), d=date)`
 * (docs/wire.md#serializers-and-compression).
 */
const KOMBU_563_MARKERS =
  '[[{"__type__": "datetime", "__value__": "2024-01-02T03:04:05+00:00"}, {"__type__": "bytes", "__value__": "ab"}, ' +
  '{"__type__": "uuid", "__value__": {"hex": "00000000000000000000000000000001"}}, {"__type__": "decimal", "__value__": "1.5"}], ' +
  '{"d": {"__type__": "date", "__value__": "2024-01-02"}}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]';

const json = (value: unknown): Buffer => jsonCodec.encode(value);
const unjson = (text: string | Buffer): unknown => jsonCodec.decode(typeof text === 'string' ? Buffer.from(text, 'utf8') : text);

function isMarkerShaped(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some(isMarkerShaped);
  const keys = Object.keys(value);
  if (keys.length === 2 && keys.includes('__type__') && keys.includes('__value__')) return true;
  return Object.values(value).some(isMarkerShaped);
}

/** JSON has no -0. */
/** True when a JSON value holds an object with an own `__proto__` key anywhere. */
function hasProtoKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasProtoKey);
  if (value && typeof value === 'object') return Object.hasOwn(value, '__proto__') || Object.values(value).some(hasProtoKey);
  return false;
}

function withoutNegativeZero(value: unknown): unknown {
  if (Object.is(value, -0)) return 0;
  if (Array.isArray(value)) return value.map(withoutNegativeZero);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutNegativeZero(v)]));
  }
  return value;
}

const pythonDate = fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true });
const bytes = fc.uint8Array({ maxLength: 64 }).map((u) => Buffer.from(u));
const utf8Bytes = fc.string({ unit: 'grapheme', maxLength: 32 }).map((s) => Buffer.from(s, 'utf8'));

describe('json codec', () => {
  it('has kombu’s content type and encoding', () => {
    expect(jsonCodec.name).toBe('json');
    expect(jsonCodec.contentType).toBe('application/json');
    expect(jsonCodec.contentEncoding).toBe('utf-8');
  });

  it('round-trips any JSON value', () => {
    fc.assert(
      fc.property(
        fc.jsonValue().filter((v) => !isMarkerShaped(v)),
        (value) => {
          expect(unjson(json(value))).toEqual(withoutNegativeZero(value));
        },
      ),
    );
  });

  it('round-trips Dates (ms precision) and bytes nested anywhere', () => {
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof({ depthSize: 'small' }, tie('leaf'), tie('array'), tie('object')),
      leaf: fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), pythonDate, bytes, utf8Bytes),
      array: fc.array(tie('tree'), { maxLength: 4 }),
      object: fc.dictionary(fc.string().filter((k) => k !== '__type__' && k !== '__value__'), tie('tree'), { maxKeys: 4 }),
    }));
    fc.assert(
      fc.property(tree, (value) => {
        expect(unjson(json(value))).toEqual(value);
      }),
    );
  });

  it('writes datetimes like Python’s isoformat() of an aware UTC datetime', () => {
    expect(json(new Date('2024-01-02T03:04:05Z')).toString()).toBe('{"__type__":"datetime","__value__":"2024-01-02T03:04:05+00:00"}');
    expect(json({ at: new Date('2024-01-02T03:04:05.120Z') }).toString()).toBe(
      '{"at":{"__type__":"datetime","__value__":"2024-01-02T03:04:05.120000+00:00"}}',
    );
    expect(json([new Date('0009-03-04T00:00:00Z')]).toString()).toBe('[{"__type__":"datetime","__value__":"0009-03-04T00:00:00+00:00"}]');
  });

  it('writes bytes as text when they are UTF-8, else base64 (kombu ≥ 5.3)', () => {
    expect(json(Buffer.from('ab')).toString()).toBe('{"__type__":"bytes","__value__":"ab"}');
    expect(json([new Uint8Array([0xff, 0x00])]).toString()).toBe('[{"__type__":"base64","__value__":"/wA="}]');
    const view = new Uint8Array([0x41, 0x42, 0x43, 0x44]).subarray(1, 3);
    expect(json({ v: view }).toString()).toBe('{"v":{"__type__":"bytes","__value__":"BC"}}');
  });

  it('takes the same path for class instances with toJSON and plain data', () => {
    class Money {
      constructor(readonly cents: number) {}
      toJSON(): string {
        return `${this.cents / 100} EUR`;
      }
    }
    expect(json({ price: new Money(250), when: new Date(0) }).toString()).toBe(
      '{"price":"2.5 EUR","when":{"__type__":"datetime","__value__":"1970-01-01T00:00:00+00:00"}}',
    );
    // Compact separators: Python's default ", " / ": " is not required (docs/wire.md#serializers-and-compression).
    expect(json([1, { a: 'x' }]).toString()).toBe('[1,{"a":"x"}]');
  });

  it('refuses what JSON would silently mangle, with EncodeError', () => {
    expect(() => json({ n: 10n })).toThrow(EncodeError);
    expect(() => json({ n: 10n })).toThrow(/BigInt 10n.*Number\(x\)/);
    expect(() => json({ m: new Map([['a', 1]]) })).toThrow(EncodeError);
    expect(() => json([new Set([1])])).toThrow(EncodeError);
    expect(() => json(new Date(Number.NaN))).toThrow(EncodeError);
    expect(() => json(new Date('+010000-01-01T00:00:00Z'))).toThrow(/years 1 to 9999/);
    expect(() => json(undefined)).toThrow(EncodeError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => json(cyclic)).toThrow(EncodeError);
    // A wide cycle must not make the pre-scan explode.
    const wide: unknown[] = [];
    wide.push(wide, wide, wide);
    expect(() => json(wide)).toThrow(EncodeError);
  });

  it('decodes the kombu 5.6.3 marker sample', () => {
    expect(unjson(KOMBU_563_MARKERS)).toEqual([
      [new Date('2024-01-02T03:04:05Z'), Buffer.from('ab'), '00000000-0000-0000-0000-000000000001', '1.5'],
      { d: '2024-01-02' },
      { callbacks: null, errbacks: null, chain: null, chord: null },
    ]);
  });

  it('decodes every marker type', () => {
    const marker = (t: string, v: unknown): string => JSON.stringify({ __type__: t, __value__: v });
    expect(unjson(marker('datetime', '2024-01-02T03:04:05.123456+00:00'))).toEqual(new Date('2024-01-02T03:04:05.123Z'));
    expect(unjson(marker('datetime', '2024-01-02T08:34:05+05:30'))).toEqual(new Date('2024-01-02T03:04:05Z'));
    expect(unjson(marker('datetime', '2024-01-02T03:04:05'))).toEqual(new Date('2024-01-02T03:04:05Z')); // naive = UTC
    expect(unjson(marker('datetime', '0001-01-01T00:00:00Z'))).toEqual(new Date('0001-01-01T00:00:00Z'));
    expect(unjson(marker('time', '03:04:05.000100'))).toBe('03:04:05.000100');
    expect(unjson(marker('decimal', '3.14159265358979323846'))).toBe('3.14159265358979323846');
    expect(unjson(marker('uuid', { hex: '{12345678-1234-5678-1234-567812345678}' }))).toBe('12345678-1234-5678-1234-567812345678');
    expect(unjson(marker('base64', '/wA='))).toEqual(Buffer.from([0xff, 0]));
    expect(unjson(marker('bytes', 'héllo'))).toEqual(Buffer.from('héllo', 'utf8'));
  });

  it('reads datetime markers with the grammar and ranges the task protocol uses for eta (one ISO 8601 parser)', () => {
    const datetime = (v: string): string => JSON.stringify({ __type__: 'datetime', __value__: v });
    // Python's fromisoformat reads a date alone, and an offset of hours alone.
    expect(unjson(datetime('2024-01-02'))).toEqual(new Date('2024-01-02T00:00:00Z'));
    expect(unjson(datetime('2024-01-02T08:04:05+05'))).toEqual(new Date('2024-01-02T03:04:05Z'));
    // Neither year 0 nor a UTC offset of a day or more exists in Python.
    expect(() => unjson(datetime('0000-01-01T00:00:00Z'))).toThrow(/year 0/);
    expect(() => unjson(datetime('2024-01-02T03:04:05+24:00'))).toThrow(/offset is out of range/);
  });

  it('decodes markers whose keys are spelt with escapes, and leaves other objects alone', () => {
    expect(unjson('{"\\u005f_type__": "decimal", "__value__": "1"}')).toBe('1');
    expect(unjson('{"__type__": "decimal", "__value__": "1", "extra": 1}')).toEqual({ __type__: 'decimal', __value__: '1', extra: 1 });
    expect(unjson('{"__type__": "decimal"}')).toEqual({ __type__: 'decimal' });
  });

  it('throws DecodeError for garbage, invalid UTF-8, unknown or malformed markers', () => {
    expect(() => unjson('{"a": ')).toThrow(DecodeError);
    expect(() => unjson('{"a": ')).toThrow(/application\/json.*\{\\"a\\": /);
    expect(() => unjson('NaN')).toThrow(DecodeError);
    expect(() => unjson(Buffer.from([0x22, 0xff, 0x22]))).toThrow(/not valid UTF-8/);
    expect(() => unjson('{"__type__": "pickle", "__value__": "x"}')).toThrow(DecodeError);
    expect(() => unjson('{"__type__": "pickle", "__value__": "x"}')).toThrow(/Unsupported JSON type marker/);
    expect(() => unjson('{"__type__": "datetime", "__value__": "yesterday"}')).toThrow(DecodeError);
    expect(() => unjson('{"__type__": "datetime", "__value__": "2024-02-30T00:00:00"}')).toThrow(DecodeError);
    expect(() => unjson('{"__type__": "uuid", "__value__": {"hex": "xyz"}}')).toThrow(DecodeError);
    expect(() => unjson('{"__type__": "bytes", "__value__": 5}')).toThrow(DecodeError);
  });
});

describe('raw codec', () => {
  it('passes bytes through and sends strings as UTF-8', () => {
    fc.assert(
      fc.property(bytes, (body) => {
        expect(rawCodec.decode(rawCodec.encode(body))).toEqual(body);
      }),
    );
    expect(rawCodec.encode('hé')).toEqual(Buffer.from('hé', 'utf8'));
    expect(rawCodec.contentType).toBe('application/data');
    expect(rawCodec.contentEncoding).toBe('binary');
    expect(() => rawCodec.encode({ a: 1 })).toThrow(EncodeError);
  });
});

describe('msgpack codec', () => {
  afterEach(() => {
    vi.doUnmock('@msgpack/msgpack');
    vi.resetModules();
  });

  it('round-trips values and bytes, writing what Python’s packb(use_bin_type=True) writes', async () => {
    const codec = await loadMsgpackCodec();
    expect(codec.contentType).toBe('application/x-msgpack');
    expect(codec.contentEncoding).toBe('binary');
    // msgpack.packb([1, "a", b"\x00"], use_bin_type=True) == b'\x93\x01\xa1a\xc4\x01\x00'
    expect(codec.encode([1, 'a', Buffer.from([0])])).toEqual(Buffer.from([0x93, 0x01, 0xa1, 0x61, 0xc4, 0x01, 0x00]));
    fc.assert(
      fc.property(bytes, (body) => {
        expect(Buffer.from(codec.decode(codec.encode(body)) as Uint8Array)).toEqual(body);
      }),
    );
    fc.assert(
      fc.property(fc.jsonValue().filter((value) => !hasProtoKey(value)), (value) => {
        // -0 is written as the integer 0, as for any integral number.
        expect(codec.decode(codec.encode(value))).toEqual(withoutNegativeZero(value));
      }),
    );
    expect(() => codec.decode(Buffer.from([0xc1]))).toThrow(DecodeError);
  });

  it("refuses a map with a '__proto__' key as undecodable (a worker rejects the message) rather than touching a prototype", async () => {
    const codec = await loadMsgpackCodec();
    // msgpack.packb({"__proto__": 0}): found by the property above; @msgpack/msgpack will not build such an object
    const body = Buffer.from([0x81, 0xa9, ...Buffer.from('__proto__'), 0x00]);
    expect(() => codec.decode(body)).toThrow(DecodeError);
  });

  it('is registered on demand', async () => {
    const registry = new SerializerRegistry();
    registry.register(jsonCodec);
    expect(() => registry.encode([1], 'msgpack')).toThrow(/registry\.enable\(\["msgpack"\]\).*@msgpack\/msgpack/);
    await registry.enableMsgpack();
    const encoded = registry.encode({ a: [1, 2] }, 'msgpack');
    expect(encoded.contentType).toBe('application/x-msgpack');
    expect(registry.decode(encoded, { accept: ['msgpack'] })).toEqual({ a: [1, 2] });
  });

  it('reports a missing @msgpack/msgpack as OptionalDependencyMissing', async () => {
    vi.doMock('@msgpack/msgpack', () => {
      throw new Error("Cannot find package '@msgpack/msgpack'");
    });
    vi.resetModules();
    const { loadMsgpackCodec: load } = await import('../src/serialization/msgpack-codec');
    // resetModules also gives a fresh errors module, so compare against its class.
    const errors = await import('../src/errors');
    const failure = load();
    await expect(failure).rejects.toBeInstanceOf(errors.OptionalDependencyMissing);
    await expect(failure).rejects.toMatchObject({ name: OptionalDependencyMissing.name, packageName: '@msgpack/msgpack' });
    await expect(failure).rejects.toThrow(/pnpm add @msgpack\/msgpack/);
  });
});

describe('compression', () => {
  it('round-trips any bytes through zlib and brotli, under every alias', () => {
    fc.assert(
      fc.property(bytes, fc.constantFrom('zlib', 'gzip', 'application/x-gzip', 'brotli', 'application/x-brotli'), (body, method) => {
        const { body: packed, compression } = compress(body, method);
        expect(decompress(packed, compression)).toEqual(body);
        expect(decompress(packed, method)).toEqual(body);
      }),
    );
  });

  it('x-gzip is a zlib stream, as Python’s zlib.compress writes', () => {
    const body = Buffer.from('{"hello": "world"}');
    const { body: packed, compression } = compress(body, 'gzip');
    expect(compression).toBe('application/x-gzip');
    expect(packed[0]).toBe(0x78); // zlib header, not gzip's 0x1f 0x8b
    expect(inflateSync(packed)).toEqual(body);
    expect(decompress(deflateSync(body), 'application/x-gzip')).toEqual(body);
    expect(brotliDecompressSync(compress(body, 'brotli').body)).toEqual(body);
  });

  it('rejects unknown methods and corrupt data', () => {
    expect(hasCompression('zlib')).toBe(true);
    expect(hasCompression('application/x-bz2')).toBe(false);
    expect(() => compress(Buffer.from('x'), 'application/x-bz2')).toThrow(SerializerNotRegistered);
    expect(() => decompress(Buffer.from('x'), 'lzma')).toThrow(SerializerNotRegistered);
    expect(() => decompress(Buffer.from('not zlib'), 'zlib')).toThrow(DecodeError);
  });

  it('refuses a bzip2 stream cut anywhere short of its end, as Python\'s bz2 does (EOFError), and reads it whole', async () => {
    const bzip2 = await loadBzip2Compression();
    const body = Buffer.from(JSON.stringify([[1, 2], {}, { callbacks: null, errbacks: null, chain: null, chord: null }]));
    const packed = bzip2.compress(body);
    for (let cut = 1; cut < packed.length; cut++) {
      // compressjs alone gave back the whole body from a stream cut just before its end-of-stream marker, and an
      // empty one from a header alone.
      expect(() => bzip2.decompress(packed.subarray(0, cut)), `cut to ${cut} of ${packed.length} bytes`).toThrow();
      expect(() => bzip2.decompress(packed.subarray(0, cut), 131_072), `cut to ${cut}, with a limit`).toThrow();
    }
    expect(bzip2.decompress(packed).equals(body)).toBe(true);
    expect(bzip2.decompress(packed, 131_072).equals(body)).toBe(true);
    // The last 10 bytes are the end-of-stream marker and the stream's CRC: what compressjs read as a whole body.
    expect(() => bzip2.decompress(packed.subarray(0, packed.length - 10))).toThrow(/cut short/);
  });

  it('stops a zip bomb at the limit without inflating it whole (zlib, brotli, bzip2)', async () => {
    const bzip2 = await loadBzip2Compression();
    const inflated = Buffer.alloc(1_000_000, 0x30);
    for (const [method, packed] of [
      ['zlib', compress(inflated, 'zlib').body],
      ['brotli', compress(inflated, 'brotli').body],
      // compressjs is slow to compress a megabyte (pure JavaScript); a tenth of it shows the same.
      ['bzip2', bzip2.compress(inflated.subarray(0, 100_000))],
    ] as const) {
      expect(packed.length).toBeLessThan(2000);
      if (method === 'bzip2') {
        expect(() => bzip2.decompress(packed, 10_000)).toThrow(MessageTooLarge);
        expect(bzip2.decompress(packed, 100_000).equals(inflated.subarray(0, 100_000))).toBe(true);
        continue;
      }
      expect(() => decompress(packed, method, 10_000)).toThrow(MessageTooLarge);
      expect(() => decompress(packed, method, 10_000)).toThrow(/inflates to more than 10,000 bytes, over the maxMessageSize limit/);
      expect(decompress(packed, method, 1_000_000).equals(inflated)).toBe(true);
    }
    const registry = new SerializerRegistry();
    registry.register(jsonCodec);
    const body = compress(Buffer.from(JSON.stringify('0'.repeat(100_000))), 'zlib').body;
    expect(() => registry.decode({ body, contentType: 'application/json', compression: 'zlib' }, { maxDecompressedSize: 1000 })).toThrow(MessageTooLarge);
    expect(registry.decode({ body, contentType: 'application/json', compression: 'zlib' })).toHaveLength(100_000);
  });
});

describe('SerializerRegistry', () => {
  it('finds serializers by name or content type', () => {
    expect(defaultSerializers.has('json')).toBe(true);
    expect(defaultSerializers.has('application/json')).toBe(true);
    expect(defaultSerializers.has('raw')).toBe(true);
    expect(defaultSerializers.has('application/data')).toBe(true);
    expect(defaultSerializers.codec('application/json')).toBe(jsonCodec);
    expect(() => defaultSerializers.codec('pickle')).toThrow(SerializerNotRegistered);
  });

  it('encodes with json by default and compresses on request', () => {
    const plain = defaultSerializers.encode([[2, 2], {}, {}]);
    expect(plain).toEqual({ body: Buffer.from('[[2,2],{},{}]'), contentType: 'application/json', contentEncoding: 'utf-8' });
    const packed = defaultSerializers.encode({ x: 'y'.repeat(100) }, 'json', { compression: 'zlib' });
    expect(packed.compression).toBe('application/x-gzip');
    expect(defaultSerializers.decode(packed, { accept: ['json'] })).toEqual({ x: 'y'.repeat(100) });
    const raw = defaultSerializers.encode(Buffer.from([1, 2]), 'raw');
    expect(raw).toEqual({ body: Buffer.from([1, 2]), contentType: 'application/data', contentEncoding: 'binary' });
  });

  it('round-trips through encode/decode with every compression', () => {
    fc.assert(
      fc.property(fc.jsonValue().filter((v) => !isMarkerShaped(v)), fc.constantFrom(undefined, 'zlib', 'brotli'), (value, compression) => {
        const encoded = defaultSerializers.encode(value, 'json', compression ? { compression } : {});
        expect(defaultSerializers.decode(encoded, { accept: ['application/json'] })).toEqual(withoutNegativeZero(value));
      }),
    );
  });

  it('accept entries may be names or content types', () => {
    const message = { body: Buffer.from('[1]'), contentType: 'application/json', contentEncoding: 'utf-8' };
    expect(defaultSerializers.decode(message, { accept: ['json'] })).toEqual([1]);
    expect(defaultSerializers.decode(message, { accept: ['application/json'] })).toEqual([1]);
    expect(defaultSerializers.decode(message, { accept: ['pickle', 'msgpack', 'json'] })).toEqual([1]);
    expect(defaultSerializers.decode(message)).toEqual([1]);
    expect(() => defaultSerializers.decode(message, { accept: ['jsno'] })).toThrow(SerializerNotRegistered);
  });

  it('throws ContentDisallowed before decompressing or decoding', () => {
    const decode = vi.fn((body: Buffer): unknown => JSON.parse(body.toString()));
    const spied: Codec = { name: 'spied', contentType: 'application/x-spied', contentEncoding: 'utf-8', encode: (v) => Buffer.from(JSON.stringify(v)), decode };
    const registry = new SerializerRegistry();
    registry.register(jsonCodec);
    registry.register(spied);
    // The compressed body is garbage: decompressing it would throw DecodeError instead.
    const message = { body: Buffer.from('not zlib at all'), contentType: 'application/x-spied', compression: 'application/x-gzip' };
    expect(() => registry.decode(message, { accept: ['json'] })).toThrow(ContentDisallowed);
    expect(decode).not.toHaveBeenCalled();
    try {
      registry.decode(message, { accept: ['json'] });
    } catch (error) {
      expect(error).toBeInstanceOf(ContentDisallowed);
      expect((error as ContentDisallowed).contentType).toBe('application/x-spied');
    }
    expect(registry.decode({ body: Buffer.from('[7]'), contentType: 'application/x-spied' }, { accept: ['spied'] })).toEqual([7]);
    expect(decode).toHaveBeenCalledTimes(1);
  });

  it('does not call the json decoder for a disallowed json message', () => {
    const spy = vi.spyOn(jsonCodec, 'decode');
    try {
      expect(() => defaultSerializers.decode({ body: Buffer.from('[1]'), contentType: 'application/json' }, { accept: ['msgpack'] })).toThrow(
        ContentDisallowed,
      );
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it('treats a missing content type as raw data', () => {
    const body = Buffer.from([0xde, 0xad]);
    expect(defaultSerializers.decode({ body, contentType: '' })).toBe(body);
    expect(defaultSerializers.decode({ body }, { accept: ['raw'] })).toBe(body);
    expect(defaultSerializers.decode({ body }, { accept: ['application/data'] })).toBe(body);
    expect(() => defaultSerializers.decode({ body, contentType: '' }, { accept: ['json'] })).toThrow(ContentDisallowed);
  });

  it('refuses pickle as ContentDisallowed even when the accept list names it', () => {
    const message = { body: Buffer.from([0x80, 0x04]), contentType: 'application/x-python-serialize' };
    expect(() => defaultSerializers.decode(message, { accept: ['json', 'pickle'] })).toThrow(ContentDisallowed);
    expect(() => defaultSerializers.decode(message)).toThrow(/kq cannot decode pickle, even when it is in the accept list/);
  });

  it('names the fix when an optional serializer is not loaded', () => {
    const registry = new SerializerRegistry();
    expect(() => registry.encode(1, 'yaml')).toThrow(/acceptContent or taskSerializer.*registry\.enable\(\["yaml"\]\).*needs the yaml package/);
    expect(() => registry.decode({ body: Buffer.from('x'), contentType: 'application/x-yaml' })).toThrow(/registry\.enable\(\["yaml"\]\)/);
  });

  it('returns empty bodies undecoded and refuses unknown content types', () => {
    expect(defaultSerializers.decode({ body: Buffer.alloc(0), contentType: 'application/json' })).toEqual(Buffer.alloc(0));
    expect(() => defaultSerializers.decode({ body: Buffer.from('x'), contentType: 'application/x-yaml' })).toThrow(SerializerNotRegistered);
    expect(() => defaultSerializers.decode({ body: Buffer.from('{'), contentType: 'application/json' })).toThrow(DecodeError);
  });

  it('wraps unexpected codec failures', () => {
    const registry = new SerializerRegistry();
    registry.register({
      name: 'broken',
      contentType: 'application/x-broken',
      contentEncoding: 'binary',
      encode: () => {
        throw new Error('boom');
      },
      decode: () => {
        throw new Error('bang');
      },
    });
    expect(() => registry.encode(1, 'broken')).toThrow(EncodeError);
    expect(() => registry.decode({ body: Buffer.from('x'), contentType: 'application/x-broken' })).toThrow(DecodeError);
  });
});
