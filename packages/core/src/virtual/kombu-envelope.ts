import { brandClass } from '../class-brand';
import type { Headers, MessageProperties, OutgoingMessage } from '../message';
import { randomUuid } from '../random-uuid';
import type { StoredMessage } from './virtual-store';
import {
  JsonSyntaxError,
  TRUE_NODE,
  documentValue,
  member,
  parseDocument,
  pyJson,
  pyString,
  setMember,
  writeDocument,
} from '../python-json';

/**
 * The Kombu Redis envelope (docs/wire.md#the-envelope): one JSON object per message, stored in queue lists, in
 * `unacked` and sent over PUB/SUB.
 *
 *   {"body": <base64>, "content-encoding": …, "content-type": …, "headers": {…},
 *    "properties": {<publisher properties>, "delivery_info": {"exchange": …, "routing_key": …},
 *                   "priority": n, "body_encoding": "base64", "delivery_tag": <uuid4>}}
 *
 * kq writes it byte for byte as Kombu does (Python's JSON formatting, the same key order) and reads what Python
 * writes tolerantly.
 */

/**
 * kq property name → the start of its member in Kombu's `properties` (`"correlation_id": `), in the order Kombu's
 * Producer puts them there.
 */
const PROPERTY_MEMBERS: ReadonlyArray<readonly [keyof MessageProperties, string]> = [
  ['correlationId', 'correlation_id'],
  ['replyTo', 'reply_to'],
  ['deliveryMode', 'delivery_mode'],
  ['expiration', 'expiration'],
  ['messageId', 'message_id'],
  ['timestamp', 'timestamp'],
  ['type', 'type'],
  ['userId', 'user_id'],
  ['appId', 'app_id'],
].map(([name, wire]) => [name as keyof MessageProperties, `"${wire}": `] as const);

/** An envelope kq cannot turn into a message; `reason` says why (it is logged and kept with the quarantined copy). */
export class MalformedEnvelope extends Error {
  readonly reason: string;

  constructor(reason: string) {
    super(`Malformed Kombu envelope: ${reason}`);
    this.reason = reason;
  }
}
brandClass(MalformedEnvelope, '@kq/core:MalformedEnvelope');

/**
 * What a published message becomes in one queue: its own copy with a fresh Kombu delivery tag, as Kombu's channel
 * gives each queue its own copy.
 */
export function storedMessage(exchange: string, routingKey: string, message: OutgoingMessage): StoredMessage {
  return {
    body: message.body,
    contentType: message.contentType,
    contentEncoding: message.contentEncoding,
    headers: { ...message.headers },
    properties: { ...message.properties },
    exchange,
    routingKey,
    deliveryTag: randomUuid(),
    redelivered: false,
  };
}

/** The envelope of a message as Kombu's `basic_publish` would write it. */
export function encodeEnvelope(message: StoredMessage): string {
  // Written member by member rather than by building the envelope object and serializing it: every message sent
  // passes here, and the object would be garbage at once.
  const props = message.properties;
  let properties = '';
  for (const [name, member] of PROPERTY_MEMBERS) {
    const value = props[name];
    if (value !== undefined) properties += member + pyJson(value) + ', ';
  }
  const redelivered = message.redelivered ? ', "redelivered": true' : '';
  const headers: Headers = message.redelivered ? { ...message.headers, redelivered: true } : message.headers;
  // The body goes in as it is: base64 needs no escaping, and a large one need not be scanned.
  return (
    `{"body": "${message.body.toString('base64')}", "content-encoding": ${pyString(message.contentEncoding)}, ` +
    `"content-type": ${pyString(message.contentType)}, "headers": ${pyJson(headers)}, "properties": {${properties}` +
    `"delivery_info": {"exchange": ${pyString(message.exchange)}, "routing_key": ${pyString(message.routingKey)}${redelivered}}, ` +
    `"priority": ${pyJson(props.priority ?? 0)}, "body_encoding": "base64", "delivery_tag": ${pyString(message.deliveryTag)}}}`
  );
}

export interface DecodeContext {
  /** The queue the envelope was read from: the routing key when `delivery_info` lacks one. */
  queue: string;
  /** Fanout messages are never stored, so a missing delivery tag is tolerated there (one is made up). */
  makeTag?: () => string;
}

/**
 * Reads an envelope tolerantly: a missing `body_encoding` means the body is the serialized text itself, unknown
 * properties are ignored, `redelivered` is read from `properties.delivery_info` or `headers`, Python's `NaN` and
 * `Infinity` literals are accepted. Throws {@link MalformedEnvelope} for what cannot be a message.
 */
export function decodeEnvelope(raw: string, context: DecodeContext): StoredMessage {
  const envelope = parseEnvelope(raw);
  const props = envelope['properties'];
  if (!isRecord(props)) throw new MalformedEnvelope('the envelope has no properties object');
  let deliveryTag = props['delivery_tag'];
  if (typeof deliveryTag !== 'string') {
    if (!context.makeTag) throw new MalformedEnvelope('the envelope has no properties.delivery_tag string');
    deliveryTag = context.makeTag();
  }
  const headers = isRecord(envelope['headers']) ? envelope['headers'] : {};
  const info = isRecord(props['delivery_info']) ? props['delivery_info'] : {};
  return {
    body: decodeBody(envelope['body'], props['body_encoding']),
    contentType: typeof envelope['content-type'] === 'string' ? envelope['content-type'] : '',
    contentEncoding: typeof envelope['content-encoding'] === 'string' ? envelope['content-encoding'] : '',
    headers,
    properties: decodeProperties(props),
    exchange: typeof info['exchange'] === 'string' ? info['exchange'] : '',
    routingKey: typeof info['routing_key'] === 'string' ? info['routing_key'] : context.queue,
    deliveryTag: deliveryTag as string,
    redelivered: info['redelivered'] === true || headers['redelivered'] === true,
  };
}

/**
 * The envelope with `headers.redelivered` and `properties.delivery_info.redelivered` set, as Kombu's restore writes
 * it. Everything else is kept exactly (number literals, key order), so a Python message kq restores is the message
 * Python would have restored. Text that is not a JSON object comes back unchanged: a restore never drops anything.
 */
export function markRedelivered(raw: string): string {
  let document;
  try {
    document = parseDocument(raw);
  } catch (error) {
    if (error instanceof JsonSyntaxError) return raw;
    throw error;
  }
  if (document.kind !== 'object') return raw;
  const headers = member(document, 'headers');
  if (headers?.kind === 'object') setMember(headers, 'redelivered', TRUE_NODE);
  const info = member(member(document, 'properties'), 'delivery_info');
  if (info?.kind === 'object') setMember(info, 'redelivered', TRUE_NODE);
  return writeDocument(document);
}

/** `properties.priority` of an envelope as Kombu reads it (`int()` of it, 0 when absent or not a number). */
export function envelopePriority(raw: string): number {
  try {
    const props = parseEnvelope(raw)['properties'];
    return isRecord(props) ? wirePriority(props['priority']) : 0;
  } catch {
    return 0;
  }
}

function wirePriority(value: unknown): number {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof number === 'number' && Number.isFinite(number) ? Math.trunc(number) : 0;
}

function parseEnvelope(raw: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    // Python writes NaN/Infinity for such floats; JSON.parse refuses them.
    try {
      value = documentValue(parseDocument(raw));
    } catch (error) {
      throw new MalformedEnvelope(`the envelope is not JSON (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  if (!isRecord(value)) throw new MalformedEnvelope('the envelope is not a JSON object');
  return value;
}

function decodeBody(body: unknown, encoding: unknown): Buffer {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body !== 'string') throw new MalformedEnvelope(`the body is a ${Array.isArray(body) ? 'list' : typeof body}, not a string`);
  return encoding === 'base64' ? Buffer.from(body, 'base64') : Buffer.from(body, 'utf8');
}

function decodeProperties(props: Record<string, unknown>): MessageProperties {
  const result: MessageProperties = {};
  const text = (key: string): string | undefined => (typeof props[key] === 'string' ? (props[key] as string) : undefined);
  const correlationId = text('correlation_id');
  if (correlationId !== undefined) result.correlationId = correlationId;
  const replyTo = text('reply_to');
  if (replyTo !== undefined) result.replyTo = replyTo;
  const mode = props['delivery_mode'];
  if (mode === 1 || mode === 2) result.deliveryMode = mode;
  if (props['priority'] !== undefined && props['priority'] !== null) result.priority = wirePriority(props['priority']);
  const expiration = props['expiration'];
  if (typeof expiration === 'string') result.expiration = expiration;
  else if (typeof expiration === 'number' && Number.isFinite(expiration)) result.expiration = String(expiration);
  const messageId = text('message_id');
  if (messageId !== undefined) result.messageId = messageId;
  if (typeof props['timestamp'] === 'number') result.timestamp = props['timestamp'];
  const type = text('type');
  if (type !== undefined) result.type = type;
  const userId = text('user_id');
  if (userId !== undefined) result.userId = userId;
  const appId = text('app_id');
  if (appId !== undefined) result.appId = appId;
  return result;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
