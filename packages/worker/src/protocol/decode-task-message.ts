import { DecodeError, defaultSerializers, isUnreadableContent, KqError, subMillisecondMicros } from '@kq/core';
import { InvalidTaskError } from '../errors/errors';
import { parseIsoDate } from './iso-time';
import { nestingDeeperThan, MAX_NESTING_DEPTH } from './nesting-depth';
import { describeValue, isPlainRecord, MessageFields, setOwn } from './message-fields';
import { PROTOCOL_HEADER_KEYS } from './protocol-headers';
import type { DecodeTaskOptions, EncodedTaskMessage, TaskMessage } from './task-message-types';
import { defaultArgsrepr, defaultKwargsrepr } from './task-repr';

/**
 * Decodes v2 (task header present) or v1 (body dict with `task`) — including Celery's "hybrid" bodies — into a
 * TaskMessage. Throws ContentDisallowed (from core) for content outside `accept`, SecurityError for a signed body
 * (`auth`) that fails verification, DecodeError for a body that cannot be deserialized, MessageTooLarge for a
 * compressed body inflating past `maxDecompressedSize` (together: core's `isUnreadableContent`), and InvalidTaskError
 * for everything malformed: a v2 body that is not a 3-element array [args(list), kwargs(object),
 * embed(object|null)], missing id/task, non-string task name, unparseable eta/expires, wrong-typed retries/timelimit,
 * nesting deeper than {@link MAX_NESTING_DEPTH}, etc. Nothing else escapes.
 */
export function decodeTaskMessage(message: EncodedTaskMessage, options: DecodeTaskOptions = {}): TaskMessage {
  try {
    return decode(message, options);
  } catch (error) {
    throw asDecodeFailure(error);
  }
}

/**
 * {@link decodeTaskMessage}, with the body left unread when the headers alone say everything a worker needs before it
 * runs the task: a protocol 2 message (a `task` header) with `argsrepr` and `kwargsrepr` headers and an uncompressed
 * JSON body that is a list (so not Celery's hybrid dict). Its `args`, `kwargs` and embedded canvas are then empty until
 * {@link readTaskBody} fills them in ({@link taskBodyPending} says which); a revoked or expired task never reads it.
 * Content outside `accept` is refused here as before; everything else is decoded at once, as by decodeTaskMessage.
 */
export function decodeTaskHeaders(message: EncodedTaskMessage, options: DecodeTaskOptions = {}): TaskMessage {
  try {
    return bodyCanWait(message, options) ? decodeHeadersOnly(message, options) : decode(message, options);
  } catch (error) {
    throw asDecodeFailure(error);
  }
}

/** True while a message from {@link decodeTaskHeaders} has not had its body read. */
export function taskBodyPending(message: TaskMessage): boolean {
  return message.args === PENDING_ARGS;
}

/**
 * Reads the body of a message {@link decodeTaskHeaders} left pending into it (args, kwargs, callbacks, errbacks,
 * chain, chord), refusing what {@link decodeTaskMessage} would refuse, with the same errors. Nothing to do otherwise.
 */
export function readTaskBody(message: TaskMessage, encoded: EncodedTaskMessage, options: DecodeTaskOptions = {}): void {
  if (!taskBodyPending(message)) return;
  try {
    const headers = encoded.headers;
    const payload = decodePayload(encoded, headers, false, options);
    const { args, kwargs, embed } = splitV2Body(payload, headers);
    const read = fieldReader(message.name, message.id, 2);
    const body = readBodyFields(read, { args, kwargs, embed: embed ?? {} });
    message.args = body.args;
    message.kwargs = body.kwargs;
    message.callbacks = body.callbacks;
    message.errbacks = body.errbacks;
    message.chain = body.chain;
    message.chord = body.chord;
  } catch (error) {
    throw asDecodeFailure(error);
  }
}

/** What a pending message's body fields hold until it is read (never handed to a task: it runs after the read). */
const PENDING_ARGS = Object.freeze([]) as unknown as unknown[];
const PENDING_KWARGS: Record<string, unknown> = Object.freeze({});
const PENDING_BODY = Object.freeze({ args: PENDING_ARGS, kwargs: PENDING_KWARGS, embed: PENDING_KWARGS });
const JSON_CONTENT_TYPE = 'application/json';

function bodyCanWait(message: EncodedTaskMessage, options: DecodeTaskOptions): boolean {
  const headers = message.headers;
  if (message.contentType !== JSON_CONTENT_TYPE || !isPlainRecord(headers)) return false;
  if (typeof headers.task !== 'string' || typeof headers.argsrepr !== 'string' || typeof headers.kwargsrepr !== 'string') return false;
  const compression = headers.compression;
  if (typeof compression === 'string' && compression !== '') return false;
  if (!(options.serializers ?? defaultSerializers).has(JSON_CONTENT_TYPE)) return false;
  return startsWithList(message.body);
}

/** The first byte past JSON's whitespace is `[`: a list, which no v1 or hybrid body is. */
function startsWithList(body: Buffer): boolean {
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x5b;
  }
  return false;
}

function decodeHeadersOnly(message: EncodedTaskMessage, options: DecodeTaskOptions): TaskMessage {
  const headers = message.headers;
  const properties = isPlainRecord(message.properties) ? message.properties : {};
  // Refused content is refused on receipt, as when the body is read at once.
  if (options.accept !== undefined) (options.serializers ?? defaultSerializers).assertAccepted(message.contentType, options.accept);
  if (nestingDeeperThan(headers, MAX_NESTING_DEPTH)) throw tooDeep(headers, true);
  return decodeFields(headers, properties, PENDING_BODY, customHeadersOf(headers), 2, options.timezone ?? 'UTC');
}

function asDecodeFailure(error: unknown): unknown {
  if (error instanceof InvalidTaskError || isUnreadableContent(error)) return error;
  // An unknown content type or compression method: the body cannot be read (kombu raises the same family).
  if (error instanceof KqError) return new DecodeError(error.message, { cause: error });
  return new InvalidTaskError(`Cannot read the task message: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}

function decode(message: EncodedTaskMessage, options: DecodeTaskOptions): TaskMessage {
  const headers = isPlainRecord(message.headers) ? message.headers : {};
  const properties = isPlainRecord(message.properties) ? message.properties : {};
  const hasTaskHeader = Object.hasOwn(headers, 'task');
  const payload = decodePayload(message, headers, true, options);

  // Celery's consumer: a `task` header means protocol 2, unless the body is a dict with `args` ("hybrid", handled
  // like v1 with the headers taking precedence); no `task` header needs a v1 body dict naming the task.
  if (isPlainRecord(payload) && (Object.hasOwn(payload, 'args') || (!hasTaskHeader && Object.hasOwn(payload, 'task')))) {
    return decodeV1(payload, headers, properties, options);
  }
  if (!hasTaskHeader) {
    throw new InvalidTaskError(
      `Unknown message format: there is no "task" header (protocol 2) and the body is not a protocol 1 dict with a ` +
        `"task" key (it is ${describeValue(payload)}). Celery workers reject such messages too.`,
    );
  }
  return decodeV2(payload, headers, properties, options);
}

/**
 * The deserialized body, refused when it nests too deep (and, with `checkHeaders`, when the headers do). Python's json
 * cannot read nesting past its recursion limit (~1000), so no Celery client sends it; kq's own recursive code (reprs,
 * result and retry encoders) would fail on it later, somewhere less clear. A body of n bytes (uncompressed) nests at
 * most n levels, so the common small message is not walked at all.
 */
function decodePayload(message: EncodedTaskMessage, headers: Record<string, unknown>, checkHeaders: boolean, options: DecodeTaskOptions): unknown {
  const compression = headers.compression;
  const compressed = typeof compression === 'string' && compression !== '';
  const payload = (options.serializers ?? defaultSerializers).decode(
    {
      body: message.body,
      contentType: message.contentType,
      contentEncoding: message.contentEncoding,
      compression: compressed ? compression : undefined,
    },
    // The registry reads `accept` and `maxDecompressedSize` from these options: passed as they are, not copied per task.
    options,
  );
  const deepHeaders = checkHeaders && nestingDeeperThan(headers, MAX_NESTING_DEPTH);
  const mayNestDeep = compressed || message.body.length > MAX_NESTING_DEPTH;
  if (deepHeaders || (mayNestDeep && !Buffer.isBuffer(payload) && nestingDeeperThan(payload, MAX_NESTING_DEPTH))) throw tooDeep(headers, deepHeaders);
  return payload;
}

function tooDeep(headers: Record<string, unknown>, deepHeaders: boolean): InvalidTaskError {
  return new InvalidTaskError(
    `Invalid task message ${label(headers.task)} (id ${label(headers.id)}): its ${deepHeaders ? 'headers nest' : 'body nests'} deeper than ` +
      `${MAX_NESTING_DEPTH} levels, which no Celery client can send. A worker cannot run the message as sent.`,
  );
}

/** Header and property values common to both layouts, read from one merged dict. */
function decodeFields(
  fields: Record<string, unknown>,
  properties: Record<string, unknown>,
  body: { args: unknown; kwargs: unknown; embed: Record<string, unknown> },
  customHeaders: Record<string, unknown>,
  protocol: 1 | 2,
  naiveZone: string,
): TaskMessage {
  const rawName = fields.task;
  const rawId = fields.id;
  const read = fieldReader(rawName, rawId, protocol);
  if (typeof rawName !== 'string' || rawName === '') {
    throw read.fail(
      rawName === undefined || rawName === null ? 'the task name ("task") is missing' : `the task name must be a non-empty string, got ${describeValue(rawName)}`,
    );
  }
  if (typeof rawId !== 'string' || rawId === '') {
    throw read.fail(
      rawId === undefined || rawId === null ? 'the task id ("id") is missing' : `the task id must be a non-empty string, got ${describeValue(rawId)}`,
    );
  }

  const { args, kwargs, callbacks, errbacks, chain, chord } = readBodyFields(read, body);
  const [timeLimit, softTimeLimit] = read.timeLimits(fields.timelimit);
  const argsrepr = fields.argsrepr;
  const kwargsrepr = fields.kwargsrepr;
  const origin = fields.origin;
  const priority = properties.priority;
  const replyTo = properties.replyTo;
  const correlationId = properties.correlationId;

  return {
    id: rawId,
    name: rawName,
    args,
    kwargs,
    eta: readDate(read, 'eta', fields.eta, naiveZone),
    // Only when the text had them: a message kq wrote (whole milliseconds) decodes as before.
    ...(typeof fields.eta === 'string' && subMillisecondMicros(fields.eta) !== 0 ? { etaMicroseconds: subMillisecondMicros(fields.eta) } : {}),
    expires: readDate(read, 'expires', fields.expires, naiveZone),
    retries: read.optionalCount('retries', fields.retries) ?? 0,
    timeLimit,
    softTimeLimit,
    rootId: read.optionalString('root_id', fields.root_id),
    parentId: read.optionalString('parent_id', fields.parent_id),
    group: read.optionalString('group', fields.group),
    groupIndex: read.optionalCount('group_index', fields.group_index),
    // Celery uses the shadow name only when it is truthy.
    shadow: read.optionalString('shadow', fields.shadow) || null,
    // Display-only fields: a producer's odd value is replaced rather than failing the task.
    origin: typeof origin === 'string' ? origin : null,
    argsrepr: typeof argsrepr === 'string' ? argsrepr : defaultArgsrepr(args),
    kwargsrepr: typeof kwargsrepr === 'string' ? kwargsrepr : defaultKwargsrepr(kwargs),
    ignoreResult: read.optionalBoolean('ignore_result', fields.ignore_result),
    callbacks,
    errbacks,
    chain,
    chord,
    headers: customHeaders,
    replyTo: typeof replyTo === 'string' && replyTo !== '' ? replyTo : null,
    correlationId: typeof correlationId === 'string' && correlationId !== '' ? correlationId : rawId,
    priority: typeof priority === 'number' && Number.isFinite(priority) ? priority : null,
    stamps: read.object('stamps', fields.stamps, {}) ?? {},
    replacedTaskNesting: read.optionalCount('replaced_task_nesting', fields.replaced_task_nesting) ?? 0,
    protocol,
  };
}

/** Described only when something is wrong: a valid message never pays for the label. */
function fieldReader(rawName: unknown, rawId: unknown, protocol: 1 | 2): MessageFields {
  return new MessageFields(() => `task message ${label(rawName)} (id ${label(rawId)}, protocol ${protocol})`);
}

type BodyFields = Pick<TaskMessage, 'args' | 'kwargs' | 'callbacks' | 'errbacks' | 'chain' | 'chord'>;

/** The task message's fields that come from its body: the arguments and the embedded canvas. */
function readBodyFields(read: MessageFields, body: { args: unknown; kwargs: unknown; embed: Record<string, unknown> }): BodyFields {
  const { args, kwargs, embed } = body;
  if (!Array.isArray(args)) throw read.fail(`args must be a list, got ${describeValue(args)}`);
  if (!isPlainRecord(kwargs)) throw read.fail(`kwargs must be an object (a mapping), got ${describeValue(kwargs)}`);
  const chord = embed.chord;
  return {
    args,
    kwargs,
    callbacks: read.signatureList('callbacks', embed.callbacks),
    errbacks: read.signatureList('errbacks', embed.errbacks),
    chain: read.signatureList('chain', embed.chain),
    chord: chord === undefined || chord === null ? null : read.signature('chord', chord),
  };
}

function decodeV2(
  payload: unknown,
  headers: Record<string, unknown>,
  properties: Record<string, unknown>,
  options: DecodeTaskOptions,
): TaskMessage {
  const { args, kwargs, embed } = splitV2Body(payload, headers);
  return decodeFields(headers, properties, { args, kwargs, embed: embed ?? {} }, customHeadersOf(headers), 2, options.timezone ?? 'UTC');
}

/** A protocol 2 body, `[args, kwargs, embed]`, in its parts (checked: a 3-element list with an object or null embed). */
function splitV2Body(payload: unknown, headers: Record<string, unknown>): { args: unknown; kwargs: unknown; embed: Record<string, unknown> | null } {
  const subject = (): string => `task ${label(headers.task)} (id ${label(headers.id)})`;
  if (!Array.isArray(payload)) {
    throw new InvalidTaskError(
      `Invalid protocol 2 body for ${subject()}: expected the list [args, kwargs, embed], got ${describeValue(payload)}.`,
    );
  }
  if (payload.length !== 3) {
    // Python 5.2 workers die on a 2-element body and the restored message kills them again (docs/wire.md#body).
    throw new InvalidTaskError(
      `Invalid protocol 2 body for ${subject()}: it has ${payload.length} element${payload.length === 1 ? '' : 's'}, ` +
        `but it must be exactly [args, kwargs, embed]${payload.length === 2 ? ' (the embed element is missing: send null or {} as the third element; Python workers crash on 2-element bodies)' : ''}.`,
    );
  }
  const [args, kwargs, embed] = payload as [unknown, unknown, unknown];
  if (embed !== null && !isPlainRecord(embed)) {
    throw new InvalidTaskError(
      `Invalid protocol 2 body for ${subject()}: the third element (embed) must be an object or null, got ${describeValue(embed)}.`,
    );
  }
  return { args, kwargs, embed };
}

/**
 * Protocol 1 (and hybrid) bodies: the protocol fields live in the body dict. As in Celery's `hybrid_to_proto2`,
 * message headers override body fields of the same name; `taskset` is the old name of `group`; `utc: false` means
 * naive datetimes are in the worker's zone, otherwise they are UTC.
 */
function decodeV1(
  body: Record<string, unknown>,
  headers: Record<string, unknown>,
  properties: Record<string, unknown>,
  options: DecodeTaskOptions,
): TaskMessage {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) setOwn(fields, key, value);
  if (fields.group === undefined || fields.group === null) fields.group = body.taskset;
  for (const [key, value] of Object.entries(headers)) if (PROTOCOL_HEADER_KEYS.has(key)) setOwn(fields, key, value);
  const naiveZone = body.utc === false ? (options.timezone ?? 'UTC') : 'UTC';
  const embed = { callbacks: body.callbacks, errbacks: body.errbacks, chord: body.chord, chain: null };
  const args = body.args === undefined ? [] : body.args;
  const kwargs = body.kwargs === undefined ? {} : body.kwargs;
  return decodeFields(fields, properties, { args, kwargs, embed }, customHeadersOf(headers), 1, naiveZone);
}

function readDate(read: MessageFields, field: string, value: unknown, zone: string): Date | null {
  // Celery's `maybe_iso8601` treats any falsy value (null, '') as absent.
  if (value === undefined || value === null || value === '') return null;
  if (value instanceof Date) {
    // AMQP timestamps arrive as Dates from some clients.
    if (Number.isNaN(value.getTime())) throw read.fail(`${field} is an invalid date`);
    return value;
  }
  if (typeof value !== 'string') throw read.fail(`${field} must be an ISO 8601 datetime string or null, got ${describeValue(value)}`);
  try {
    return parseIsoDate(value, zone);
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/\.$/, '') : String(error);
    throw read.fail(`${field} cannot be read (${reason})`);
  }
}

/** A task name or id for error messages: quoted when it is a string, described otherwise. */
function label(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…` : value) : describeValue(value);
}

function customHeadersOf(headers: Record<string, unknown>): Record<string, unknown> {
  const custom: Record<string, unknown> = {};
  for (const key of Object.keys(headers)) if (!PROTOCOL_HEADER_KEYS.has(key)) setOwn(custom, key, headers[key]);
  return custom;
}
