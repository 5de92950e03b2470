// Property tests: whatever we encode decodes back to the same task.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { PROTOCOL_HEADER_KEYS, decodeTaskMessage, encodeTaskMessage, type SignatureJson, type TaskMessage, type TaskMessageInit } from '../src/protocol/index';

/** kombu reads any object whose key set is exactly {__type__, __value__} as a type marker, so user data cannot be one. */
function hasMarkerShape(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some(hasMarkerShape);
  const keys = Object.keys(value);
  if (keys.length === 2 && keys.includes('__type__') && keys.includes('__value__')) return true;
  return Object.values(value).some(hasMarkerShape);
}

// JSON has no -0: normalize it (and anything else JSON cannot hold) the way the wire will.
const jsonValue = fc
  .jsonValue({ maxDepth: 4 })
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown)
  .filter((value) => !hasMarkerShape(value));
// Python datetimes cover years 1..9999; Dates and Buffers travel as kombu ≥5.3 markers.
const pythonDate = fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true });
const argValue = fc.oneof(
  { weight: 6, arbitrary: jsonValue },
  { weight: 1, arbitrary: pythonDate },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 16 }).map((bytes) => Buffer.from(bytes)) },
);
const kwargsArb = fc.dictionary(fc.string(), argValue).filter((value) => !hasMarkerShape(value));
const text = fc.string({ minLength: 1, maxLength: 40 });
const optional = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(arb, { nil: null });
const seconds = fc.oneof(fc.integer({ min: 1, max: 86_400 }), fc.double({ min: 0.001, max: 86_400, noNaN: true }));
const signature: fc.Arbitrary<SignatureJson> = fc.record({
  task: text,
  args: fc.array(jsonValue, { maxLength: 3 }),
  kwargs: fc.dictionary(fc.string(), jsonValue, { maxKeys: 3 }),
  options: fc.dictionary(fc.constantFrom('task_id', 'reply_to', 'queue', 'priority'), jsonValue, { maxKeys: 3 }),
  subtask_type: optional(fc.constantFrom('chain', 'group', 'chord')),
  immutable: fc.boolean(),
}).filter((value) => !hasMarkerShape(value));
const customHeaders = fc
  .dictionary(
    // Protocol names are included on purpose: the encoder must drop them rather than let them override the protocol.
    fc.oneof({ weight: 4, arbitrary: fc.string({ minLength: 1 }) }, { weight: 1, arbitrary: fc.constantFrom(...PROTOCOL_HEADER_KEYS) }),
    jsonValue,
    { maxKeys: 4 },
  )
  .filter((value) => !hasMarkerShape(value));

const taskInit: fc.Arbitrary<TaskMessageInit> = fc.record(
  {
    id: text,
    name: text,
    args: fc.array(argValue, { maxLength: 6 }),
    kwargs: kwargsArb,
    eta: optional(pythonDate),
    expires: optional(pythonDate),
    retries: fc.nat({ max: 1000 }),
    timeLimit: optional(seconds),
    softTimeLimit: optional(seconds),
    rootId: optional(text),
    parentId: optional(text),
    group: optional(text),
    groupIndex: optional(fc.nat({ max: 1000 })),
    shadow: optional(text),
    origin: text,
    ignoreResult: fc.boolean(),
    callbacks: optional(fc.array(signature, { maxLength: 2 })),
    errbacks: optional(fc.array(signature, { maxLength: 2 })),
    chain: optional(fc.array(signature, { maxLength: 3 })),
    chord: optional(signature),
    headers: customHeaders,
    replyTo: optional(text),
    priority: fc.integer({ min: 0, max: 255 }),
    stamps: fc.dictionary(fc.string({ minLength: 1 }), jsonValue, { maxKeys: 2 }).filter((value) => !hasMarkerShape(value)),
    replacedTaskNesting: fc.nat({ max: 10 }),
  },
  { requiredKeys: ['id', 'name'] },
);

/** What decoding an encoded init yields: the init with Celery's defaults filled in. */
function expectedTask(init: TaskMessageInit, encoded: ReturnType<typeof encodeTaskMessage>): TaskMessage {
  return {
    id: init.id,
    name: init.name,
    args: init.args ?? [],
    kwargs: init.kwargs ?? {},
    eta: init.eta ?? null,
    expires: init.expires ?? null,
    retries: init.retries ?? 0,
    timeLimit: init.timeLimit ?? null,
    softTimeLimit: init.softTimeLimit ?? null,
    rootId: init.rootId || init.id,
    parentId: init.parentId ?? null,
    group: init.group ?? null,
    groupIndex: init.groupIndex ?? null,
    shadow: init.shadow ?? null,
    origin: init.origin ?? (encoded.headers.origin as string),
    argsrepr: encoded.headers.argsrepr as string,
    kwargsrepr: encoded.headers.kwargsrepr as string,
    ignoreResult: init.ignoreResult ?? false,
    callbacks: init.callbacks ?? null,
    errbacks: init.errbacks ?? null,
    chain: init.chain ?? null,
    chord: init.chord ?? null,
    headers: Object.fromEntries(Object.entries(init.headers ?? {}).filter(([key]) => !PROTOCOL_HEADER_KEYS.has(key))),
    replyTo: init.replyTo || null,
    correlationId: init.id,
    priority: init.priority ?? 0,
    stamps: init.stamps ?? {},
    replacedTaskNesting: init.replacedTaskNesting ?? 0,
    protocol: 2,
  };
}

describe('encode → decode round trip', () => {
  it('preserves every field (json)', () => {
    fc.assert(
      fc.property(taskInit, (init) => {
        const encoded = encodeTaskMessage(init);
        expect(decodeTaskMessage(encoded, { accept: ['json'] })).toEqual(expectedTask(init, encoded));
      }),
      { numRuns: 300 },
    );
  });

  it('preserves every field through zlib compression, without modern headers, and after a second round trip', () => {
    fc.assert(
      fc.property(taskInit, fc.boolean(), (init, modern) => {
        const encoded = encodeTaskMessage(init, { compression: 'zlib', modernHeaders: modern });
        const decoded = decodeTaskMessage(encoded, { accept: ['application/json'] });
        const expected = expectedTask(init, encoded);
        if (!modern) Object.assign(expected, { stamps: {}, replacedTaskNesting: 0 });
        expect(decoded).toEqual(expected);
        // Re-encoding a decoded task (what a retry does) gives the same message.
        const again = encodeTaskMessage(decoded, { compression: 'zlib', modernHeaders: modern });
        expect(again.headers).toEqual(encoded.headers);
        expect(again.body.equals(encoded.body)).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it('keeps eta/expires to the millisecond and writes Python isoformat', () => {
    fc.assert(
      fc.property(pythonDate, (date) => {
        const encoded = encodeTaskMessage({ id: 'a', name: 't', eta: date, expires: date });
        expect(encoded.headers.eta).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}000)?\+00:00$/);
        const decoded = decodeTaskMessage(encoded);
        expect(decoded.eta?.getTime()).toBe(date.getTime());
        expect(decoded.expires?.getTime()).toBe(date.getTime());
      }),
    );
  });
});
