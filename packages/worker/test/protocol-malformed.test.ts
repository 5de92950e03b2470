// Malformed task messages: each is refused with the right typed error and a reason, and nothing else ever escapes.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { deflateSync } from 'node:zlib';
import { ContentDisallowed, DecodeError, MessageTooLarge } from '@kq/core';
import { InvalidTaskError } from '../src/errors/errors';
import { decodeTaskMessage, encodeTaskMessage, type EncodedTaskMessage } from '../src/protocol/index';

const ID = '9f0c1d2e-0000-4000-8000-000000000001';
const headers = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ lang: 'py', task: 'proj.add', id: ID, ...extra });
const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const message = (over: Partial<EncodedTaskMessage> = {}): EncodedTaskMessage => ({
  body: json([[2, 2], {}, null]),
  contentType: 'application/json',
  contentEncoding: 'utf-8',
  headers: headers(),
  properties: { correlationId: ID },
  ...over,
});

/** `depth` lists, one inside the other: the body's args at 1 + depth levels. */
const nest = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

type ErrorClass = typeof InvalidTaskError | typeof ContentDisallowed | typeof DecodeError;

const table: Array<[string, EncodedTaskMessage, ErrorClass, RegExp]> = [
  ['a 2-element body', message({ body: json([[4, 4], {}]) }), InvalidTaskError, /2 elements.*embed element is missing/],
  ['a 4-element body', message({ body: json([[], {}, null, 1]) }), InvalidTaskError, /4 elements/],
  ['a body that is not an array', message({ body: json('hello') }), InvalidTaskError, /expected the list \[args, kwargs, embed\]/],
  ['a dict body without args under a task header', message({ body: json({ x: 1 }) }), InvalidTaskError, /expected the list/],
  ['args that are not a list', message({ body: json({ 0: 1 }) }), InvalidTaskError, /expected the list/],
  ['args as an object', message({ body: json([{ a: 1 }, {}, null]) }), InvalidTaskError, /args must be a list/],
  ['non-object kwargs', message({ body: json([[], [1, 2], null]) }), InvalidTaskError, /kwargs must be an object/],
  ['null kwargs', message({ body: json([[], null, null]) }), InvalidTaskError, /kwargs must be an object/],
  ['an embed that is a list', message({ body: json([[], {}, []]) }), InvalidTaskError, /embed\) must be an object or null/],
  ['callbacks that are not a list', message({ body: json([[], {}, { callbacks: 'x' }]) }), InvalidTaskError, /callbacks must be a list/],
  ['a chain link without a task name', message({ body: json([[], {}, { chain: [{ args: [] }] }]) }), InvalidTaskError, /chain\[0\] must be a signature/],
  ['no task header and a body that is not v1', message({ headers: { id: ID } }), InvalidTaskError, /no "task" header.*not a protocol 1 dict/],
  ['no headers at all and a list body', message({ headers: {} }), InvalidTaskError, /Unknown message format/],
  ['a missing id', message({ headers: { task: 'proj.add' } }), InvalidTaskError, /task id \("id"\) is missing/],
  ['a null id', message({ headers: headers({ id: null }) }), InvalidTaskError, /task id \("id"\) is missing/],
  ['a numeric id', message({ headers: headers({ id: 42 }) }), InvalidTaskError, /task id must be a non-empty string/],
  ['a non-string task name', message({ headers: headers({ task: 7 }) }), InvalidTaskError, /task name must be a non-empty string/],
  ['a null task name', message({ headers: headers({ task: null }) }), InvalidTaskError, /task name \("task"\) is missing/],
  ['eta garbage', message({ headers: headers({ eta: 'tomorrow-ish' }) }), InvalidTaskError, /eta cannot be read.*tomorrow-ish/],
  ['eta with trailing garbage', message({ headers: headers({ eta: '2026-01-01T00:00:00+00:00xyz' }) }), InvalidTaskError, /eta cannot be read/],
  ['eta on 30 February', message({ headers: headers({ eta: '2026-02-30T00:00:00' }) }), InvalidTaskError, /day 30 is out of range/],
  ['eta as a number', message({ headers: headers({ eta: 1767225600 }) }), InvalidTaskError, /eta must be an ISO 8601 datetime string/],
  ['expires garbage', message({ headers: headers({ expires: 'never' }) }), InvalidTaskError, /expires cannot be read/],
  ['retries as a string', message({ headers: headers({ retries: '1' }) }), InvalidTaskError, /retries must be a non-negative integer/],
  ['negative retries', message({ headers: headers({ retries: -1 }) }), InvalidTaskError, /retries must be a non-negative integer/],
  ['fractional retries', message({ headers: headers({ retries: 1.5 }) }), InvalidTaskError, /retries must be a non-negative integer/],
  ['timelimit as a number', message({ headers: headers({ timelimit: 10 }) }), InvalidTaskError, /timelimit must be a \[hard, soft\] pair/],
  ['timelimit with 3 entries', message({ headers: headers({ timelimit: [1, 2, 3] }) }), InvalidTaskError, /timelimit must be a \[hard, soft\] pair/],
  ['a string time limit', message({ headers: headers({ timelimit: ['10', null] }) }), InvalidTaskError, /hard time limit/],
  ['a negative soft time limit', message({ headers: headers({ timelimit: [null, -5] }) }), InvalidTaskError, /soft time limit/],
  ['group_index as a string', message({ headers: headers({ group_index: '0' }) }), InvalidTaskError, /group_index/],
  ['a numeric parent_id', message({ headers: headers({ parent_id: 5 }) }), InvalidTaskError, /parent_id must be a string/],
  ['ignore_result as a string', message({ headers: headers({ ignore_result: 'yes' }) }), InvalidTaskError, /ignore_result must be a boolean/],
  ['stamps as a list', message({ headers: headers({ stamps: [] }) }), InvalidTaskError, /stamps must be an object/],
  ['a v1 body with a non-object kwargs', message({ headers: {}, body: json({ task: 'proj.add', id: ID, args: [], kwargs: 3 }) }), InvalidTaskError, /kwargs must be an object/],
  ['a v1 body without an id', message({ headers: {}, body: json({ task: 'proj.add', args: [] }) }), InvalidTaskError, /task id \("id"\) is missing/],
  ['a wrong content type with accept [json]', message({ contentType: 'application/x-python-serialize', contentEncoding: 'binary', body: Buffer.from([0x80, 0x04]) }), ContentDisallowed, /application\/x-python-serialize/],
  ['yaml with accept [json]', message({ contentType: 'application/x-yaml' }), ContentDisallowed, /not in the accept list/],
  ['invalid UTF-8', message({ body: Buffer.from([0x5b, 0xff, 0xfe, 0x5d]) }), DecodeError, /not valid UTF-8/],
  ['truncated JSON', message({ body: Buffer.from('[[2, 2], {}, {"callbacks": nu') }), DecodeError, /Cannot decode an application\/json body/],
  ['an empty body', message({ body: Buffer.alloc(0) }), InvalidTaskError, /expected the list/],
  ['an unknown JSON type marker', message({ body: json([[{ __type__: 'frobnicate', __value__: 1 }], {}, null]) }), DecodeError, /Unsupported JSON type marker/],
  ['corrupt zlib data', message({ headers: headers({ compression: 'application/x-gzip' }), body: Buffer.from('not zlib') }), DecodeError, /Cannot decompress/],
  ['an unknown compression', message({ headers: headers({ compression: 'application/x-bz2' }), body: Buffer.from('BZh') }), DecodeError, /No compression method/],
  ['an unknown content type (no accept list)', message({ contentType: 'application/x-frob' }), DecodeError, /No serializer is registered/],
  ['args nested 1001 deep', message({ body: Buffer.from(`[${nest(1000)}, {}, null]`) }), InvalidTaskError, /body nests deeper than 1000 levels/],
  ['kwargs nested 100,000 deep', message({ body: Buffer.from(`[[], ${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}, null]`) }), InvalidTaskError, /body nests deeper than 1000/],
  ['a small compressed body nesting deep', message({ headers: headers({ compression: 'zlib' }), body: deflateSync(`[${nest(5000)}, {}, null]`) }), InvalidTaskError, /body nests deeper/],
  ['a header nested 1001 deep', message({ headers: headers({ custom: JSON.parse(nest(1000)) as unknown }) }), InvalidTaskError, /headers nest deeper than 1000/],
];

describe('malformed task messages', () => {
  it.each(table)('rejects %s', (_name, input, errorClass, reason) => {
    const accept = errorClass === ContentDisallowed || input.contentType === 'application/json' ? ['json'] : undefined;
    let thrown: unknown;
    try {
      decodeTaskMessage(input, accept === undefined ? {} : { accept });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(errorClass);
    expect((thrown as Error).message).toMatch(reason);
  });

  it('names the task and id in the error', () => {
    expect(() => decodeTaskMessage(message({ headers: headers({ retries: 'x' }) }))).toThrow(
      new RegExp(`"proj\\.add".*${ID}`),
    );
  });

  it('reads what Python tolerates: null/absent optional headers, empty embed, timelimit [] or zeros, eta ""', () => {
    const minimal = decodeTaskMessage(message({ body: json([[2, 2], {}, {}]) }));
    expect(minimal).toMatchObject({ retries: 0, timeLimit: null, softTimeLimit: null, eta: null, rootId: null, argsrepr: '(2, 2)', kwargsrepr: '{}' });
    const nulls = decodeTaskMessage(
      message({ headers: headers({ timelimit: [null, null], root_id: null, parent_id: null, eta: null, retries: null, shadow: '' }) }),
    );
    expect(nulls).toMatchObject({ retries: 0, shadow: null, eta: null });
    expect(decodeTaskMessage(message({ headers: headers({ timelimit: [] }) })).timeLimit).toBeNull();
    expect(decodeTaskMessage(message({ headers: headers({ timelimit: [0, 0] }) }))).toMatchObject({ timeLimit: null, softTimeLimit: null });
    expect(decodeTaskMessage(message({ headers: headers({ eta: '' }) })).eta).toBeNull();
    expect(decodeTaskMessage(message({ headers: headers({ ignore_result: 1 }) })).ignoreResult).toBe(true);
    // A raw (un-base64'd) body and a kwargs-only call, both accepted by Python (docs/wire.md#the-envelope).
    expect(decodeTaskMessage(message({ body: json([[], { x: 1, y: 2 }, { callbacks: null, errbacks: null, chain: null, chord: null }]) })).kwargs).toEqual({ x: 1, y: 2 });
  });

  it('keeps custom headers and never lets them shadow protocol fields', () => {
    const task = decodeTaskMessage(message({ headers: headers({ tenant: 'acme', 'x-death': [{ count: 1 }], redelivered: true, compression: '' }) }));
    expect(task.headers).toEqual({ tenant: 'acme', 'x-death': [{ count: 1 }] });
    const proto = decodeTaskMessage(message({ headers: JSON.parse(`{"task":"proj.add","id":"${ID}","__proto__":{"polluted":true}}`) as Record<string, unknown> }));
    expect(Object.hasOwn(proto.headers, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(proto.headers)).toBe(Object.prototype);
  });

  it('decodes protocol 1 bodies, with taskset as group, utc flag, and headers overriding hybrid bodies', () => {
    const v1 = decodeTaskMessage(
      message({
        headers: { custom: 1 },
        body: json({
          task: 'proj.add', id: ID, args: [1, 2], kwargs: { z: 3 }, retries: 2, eta: '2026-07-01T12:00:00', expires: null,
          utc: true, taskset: 'ts-1', timelimit: [30, 20], callbacks: [{ task: 'proj.cb', args: [], kwargs: {}, options: {}, subtask_type: null, immutable: false }],
          errbacks: null, chord: null,
        }),
      }),
      { timezone: 'Europe/Berlin' },
    );
    expect(v1).toMatchObject({
      protocol: 1, name: 'proj.add', id: ID, args: [1, 2], kwargs: { z: 3 }, retries: 2, group: 'ts-1',
      eta: new Date('2026-07-01T12:00:00Z'), timeLimit: 30, softTimeLimit: 20, chain: null, headers: { custom: 1 },
      argsrepr: '(1, 2)', kwargsrepr: "{'z': 3}",
    });
    expect(v1.callbacks).toHaveLength(1);
    const local = decodeTaskMessage(message({ headers: {}, body: json({ task: 't', id: ID, args: [], kwargs: {}, eta: '2026-07-01T12:00:00', utc: false }) }), { timezone: 'Europe/Berlin' });
    expect(local.eta).toEqual(new Date('2026-07-01T10:00:00Z'));
    const hybrid = decodeTaskMessage(message({ headers: headers({ id: 'from-header', retries: 4 }), body: json({ task: 'proj.add', id: 'from-body', args: [9], retries: 1 }) }));
    expect(hybrid).toMatchObject({ protocol: 1, id: 'from-header', retries: 4, args: [9], kwargs: {} });
    const noArgs = decodeTaskMessage(message({ headers: {}, body: json({ task: 'proj.add', id: ID }) }));
    expect(noArgs).toMatchObject({ protocol: 1, args: [], kwargs: {} });
  });

  it('interprets naive v2 datetimes in the configured zone and rejects an unknown zone with a reason', () => {
    const naive = message({ headers: headers({ eta: '2026-01-15T12:00:00' }) });
    expect(decodeTaskMessage(naive).eta).toEqual(new Date('2026-01-15T12:00:00Z'));
    expect(decodeTaskMessage(naive, { timezone: 'Europe/Berlin' }).eta).toEqual(new Date('2026-01-15T11:00:00Z'));
    expect(() => decodeTaskMessage(naive, { timezone: 'Mars/Olympus' })).toThrow(/Unknown time zone "Mars\/Olympus"/);
  });

  it('reads nesting up to 1000 levels, as deep as a Python client can send', () => {
    expect(decodeTaskMessage(message({ body: Buffer.from(`[${nest(999)}, {}, null]`) })).args).toHaveLength(1);
  });

  it('stops a compressed body inflating past maxDecompressedSize, before it is parsed', () => {
    const bomb = message({ headers: headers({ compression: 'zlib' }), body: deflateSync(`[["${'0'.repeat(100_000)}"], {}, null]`) });
    expect(() => decodeTaskMessage(bomb, { maxDecompressedSize: 10_000 })).toThrow(MessageTooLarge);
    expect(decodeTaskMessage(bomb, { maxDecompressedSize: 200_000 }).args).toHaveLength(1);
  });

  it('decodes compressed bodies', () => {
    const body = deflateSync(json([[1], {}, null]));
    expect(decodeTaskMessage(message({ body, headers: headers({ compression: 'application/x-gzip' }) })).args).toEqual([1]);
  });

  it('never throws anything but ContentDisallowed, DecodeError or InvalidTaskError (fuzzed headers and bodies)', () => {
    const anyJson = fc.jsonValue({ maxDepth: 3 });
    const headerValue = fc.oneof(anyJson, fc.constant(undefined), fc.date({ noInvalidDate: false }));
    const fuzzHeaders = fc.record(
      {
        task: fc.oneof(fc.constant('proj.add'), headerValue),
        id: fc.oneof(fc.constant(ID), headerValue),
        eta: fc.oneof(fc.constant('2026-01-01T00:00:00Z'), fc.string(), headerValue),
        expires: headerValue,
        retries: headerValue,
        timelimit: fc.oneof(fc.tuple(headerValue, headerValue), headerValue),
        group_index: headerValue,
        stamps: headerValue,
        compression: fc.oneof(fc.constant('application/x-gzip'), fc.constant('zlib'), headerValue),
        ignore_result: headerValue,
      },
      { requiredKeys: [] },
    );
    const embed = fc.oneof(
      anyJson,
      fc.record({ callbacks: fc.oneof(anyJson, fc.array(fc.record({ task: fc.string(), args: anyJson }))), chain: anyJson, chord: anyJson }),
    );
    const bodyValue = fc.oneof(anyJson, fc.tuple(anyJson, anyJson, embed), fc.tuple(fc.array(anyJson), fc.dictionary(fc.string(), anyJson), embed));
    const body = fc.oneof(
      bodyValue.map((value) => json(value)),
      fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
      bodyValue.map((value) => json(value).subarray(0, 7)),
    );
    const contentType = fc.constantFrom('application/json', 'application/data', 'application/x-yaml', '', 'text/plain');
    const properties = fc.record({ priority: anyJson, replyTo: anyJson, correlationId: anyJson }, { requiredKeys: [] });

    fc.assert(
      fc.property(fuzzHeaders, body, contentType, properties, fc.boolean(), (h, b, ct, p, useAccept) => {
        try {
          decodeTaskMessage(
            { headers: h, body: b, contentType: ct, contentEncoding: 'utf-8', properties: p as EncodedTaskMessage['properties'] },
            useAccept ? { accept: ['json'] } : {},
          );
        } catch (error) {
          if (!(error instanceof InvalidTaskError || error instanceof ContentDisallowed || error instanceof DecodeError)) throw error;
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('survives headers and properties that are not objects at all', () => {
    const broken = { ...message(), headers: null, properties: undefined } as unknown as EncodedTaskMessage;
    expect(() => decodeTaskMessage(broken)).toThrow(InvalidTaskError);
    const notBuffer = { ...message(), body: 'text' } as unknown as EncodedTaskMessage;
    expect(() => decodeTaskMessage(notBuffer)).toThrow();
    try {
      decodeTaskMessage(notBuffer);
    } catch (error) {
      expect(error instanceof InvalidTaskError || error instanceof DecodeError).toBe(true);
    }
  });
});

describe('encoder input validation', () => {
  it.each([
    ['an empty name', { id: 'a', name: '' }, /task name must be a non-empty string/],
    ['an empty id', { id: '', name: 't' }, /task id must be a non-empty string/],
    ['args that are not an array', { id: 'a', name: 't', args: 'x' as unknown as unknown[] }, /args must be an array/],
    ['kwargs that are an array', { id: 'a', name: 't', kwargs: [] as unknown as Record<string, unknown> }, /kwargs must be a plain object/],
    ['negative retries', { id: 'a', name: 't', retries: -1 }, /retries must be a non-negative integer/],
    ['a priority of 300', { id: 'a', name: 't', priority: 300 }, /priority must be an integer from 0 to 255/],
    ['a NaN time limit', { id: 'a', name: 't', timeLimit: Number.NaN }, /timeLimit must be a non-negative number/],
    ['an invalid eta', { id: 'a', name: 't', eta: new Date(Number.NaN) }, /invalid Date/],
    ['an eta in year 10000', { id: 'a', name: 't', eta: new Date('+010000-01-01T00:00:00Z') }, /years 1 to 9999/],
    ['an eta that is a string', { id: 'a', name: 't', eta: '2026-01-01' as unknown as Date }, /eta must be a Date/],
  ])('refuses %s', (_name, init, reason) => {
    expect(() => encodeTaskMessage(init)).toThrow(InvalidTaskError);
    expect(() => encodeTaskMessage(init)).toThrow(reason);
  });
});
