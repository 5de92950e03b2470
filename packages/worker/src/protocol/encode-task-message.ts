import { defaultSerializers, type Headers, type MessageProperties, type OutgoingMessage } from '@kq/core';
import { InvalidTaskError } from '../errors/errors';
import { formatIsoDate } from './iso-time';
import { describeValue, isPlainRecord, setOwn } from './message-fields';
import { anonNodename } from './nodename';
import { PROTOCOL_HEADER_KEYS } from './protocol-headers';
import type { EncodeTaskOptions, SignatureJson, TaskMessageInit } from './task-message-types';
import { defaultArgsrepr, defaultKwargsrepr } from './task-repr';

/**
 * Encodes protocol v2 exactly as Celery 5 does (docs/wire.md#task-messages-protocol-v2): headers in `as_task_v2`'s
 * order (with `null` where Celery writes null), then custom headers, then kombu's `compression`; properties
 * `correlation_id`, `reply_to`, `delivery_mode`, `priority` and, with `expires`, `expiration`; body
 * `[args, kwargs, embed]`.
 *
 * Throws `InvalidTaskError` for fields no Celery worker could run (an empty name, a negative retry count, a
 * non-list `args`...) and core's `EncodeError`/`SerializerNotRegistered` when the body cannot be serialized.
 */
export function encodeTaskMessage(init: TaskMessageInit, options: EncodeTaskOptions = {}): OutgoingMessage {
  const fail = (what: string): InvalidTaskError =>
    new InvalidTaskError(`Cannot encode task ${JSON.stringify(init.name)} (id ${JSON.stringify(init.id)}): ${what}.`);
  if (typeof init.name !== 'string' || init.name === '') throw fail('the task name must be a non-empty string');
  if (typeof init.id !== 'string' || init.id === '') throw fail('the task id must be a non-empty string');
  const args = init.args ?? [];
  const kwargs = init.kwargs ?? {};
  if (!Array.isArray(args)) throw fail(`args must be an array, got ${describeValue(args)}`);
  if (!isPlainRecord(kwargs)) throw fail(`kwargs must be a plain object, got ${describeValue(kwargs)}`);
  const retries = init.retries ?? 0;
  if (!isCount(retries)) throw fail(`retries must be a non-negative integer, got ${describeValue(retries)}`);
  const groupIndex = init.groupIndex ?? null;
  if (groupIndex !== null && !isCount(groupIndex)) throw fail(`groupIndex must be a non-negative integer, got ${describeValue(groupIndex)}`);
  const nesting = init.replacedTaskNesting ?? 0;
  if (!isCount(nesting)) throw fail(`replacedTaskNesting must be a non-negative integer, got ${describeValue(nesting)}`);
  const priority = init.priority ?? 0;
  if (!isCount(priority) || priority > 255) throw fail(`priority must be an integer from 0 to 255, got ${describeValue(priority)}`);
  if (!isTimeLimit(init.timeLimit)) throw fail(`timeLimit must be a non-negative number of seconds or null, got ${describeValue(init.timeLimit)}`);
  if (!isTimeLimit(init.softTimeLimit)) {
    throw fail(`softTimeLimit must be a non-negative number of seconds or null, got ${describeValue(init.softTimeLimit)}`);
  }
  const stamps = init.stamps ?? {};
  if (!isPlainRecord(stamps)) throw fail(`stamps must be a plain object, got ${describeValue(stamps)}`);
  const eta = init.eta ?? null;
  const expires = init.expires ?? null;
  if (eta !== null && !(eta instanceof Date)) throw fail(`eta must be a Date or null, got ${describeValue(eta)}`);
  if (expires !== null && !(expires instanceof Date)) throw fail(`expires must be a Date or null, got ${describeValue(expires)}`);

  const headers: Headers = {
    lang: 'ts', // Python ignores the value (a foreign "ts" was verified); it tells Python tools who sent it.
    task: init.name,
    id: init.id,
    shadow: init.shadow ?? null,
    eta: eta === null ? null : formatIsoDate(eta, init.etaMicroseconds),
    expires: expires === null ? null : formatIsoDate(expires),
    group: init.group ?? null,
    group_index: groupIndex,
    retries,
    timelimit: [init.timeLimit ?? null, init.softTimeLimit ?? null], // [hard, soft] (docs/wire.md#headers)
    root_id: init.rootId || init.id, // Celery: an empty root id means "this task starts the workflow"
    parent_id: init.parentId ?? null,
    argsrepr: init.argsrepr ?? defaultArgsrepr(args),
    kwargsrepr: init.kwargsrepr ?? defaultKwargsrepr(kwargs),
    origin: init.origin ?? options.origin ?? anonNodename(),
    ignore_result: init.ignoreResult ?? false,
  };
  if (options.modernHeaders ?? true) {
    headers.replaced_task_nesting = nesting;
    const stampNames = Object.keys(stamps);
    headers.stamped_headers = stampNames.length === 0 ? null : stampNames;
    headers.stamps = stamps;
  }
  // Custom headers go next to the protocol's, as Celery merges them; they can never replace a protocol header.
  const custom = init.headers;
  if (custom) {
    for (const key in custom) {
      if (!Object.hasOwn(custom, key)) continue;
      const value = custom[key];
      if (value !== undefined && !PROTOCOL_HEADER_KEYS.has(key)) setOwn(headers, key, value);
    }
  }

  const embed: Record<'callbacks' | 'errbacks' | 'chain' | 'chord', SignatureJson[] | SignatureJson | null> = {
    callbacks: init.callbacks ?? null,
    errbacks: init.errbacks ?? null,
    chain: init.chain ?? null,
    chord: init.chord ?? null,
  };
  const serializers = options.serializers ?? defaultSerializers;
  const encoded = serializers.encode(
    [args, kwargs, embed],
    options.serializer ?? 'json',
    options.compression ? { compression: options.compression } : {},
  );
  if (encoded.compression !== undefined) headers.compression = encoded.compression;

  const properties: MessageProperties = {
    correlationId: init.correlationId || init.id,
    replyTo: init.replyTo ?? '',
    deliveryMode: options.deliveryMode ?? 2,
    priority,
  };
  if (expires !== null) {
    // kombu: str(int(max(expires - now, 0) * 1000)); a past expiry is sent as "0" (docs/wire.md#properties).
    const now = (options.now ?? new Date()).getTime();
    properties.expiration = String(Math.max(0, Math.trunc(expires.getTime() - now)));
  }
  return {
    body: encoded.body,
    contentType: encoded.contentType,
    contentEncoding: encoded.contentEncoding,
    headers,
    properties,
  };
}

function isTimeLimit(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'number' && Number.isFinite(value) && value >= 0);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
