import type { Headers, MessageProperties, StoredMessage } from '@kq/core';

/** First line of every message file: the format and its version. */
const MAGIC = 'kq-fs-message/1\n';

interface MessageEnvelope {
  contentType: string;
  contentEncoding: string;
  headers: Headers;
  properties: MessageProperties;
  exchange: string;
  routingKey: string;
  deliveryTag: string;
}

/** A file that is not a message this transport wrote (truncated, foreign, or from a newer format). */
export class UnreadableMessageFile extends Error {
  constructor(reason: string) {
    super(`Not a readable kq message file: ${reason}`);
    this.name = 'UnreadableMessageFile';
  }
}

/**
 * A message file: the magic line, one line of JSON with everything but the body (JSON never contains a raw
 * newline), then the body bytes exactly as published — no base64, so 1 MiB stays 1 MiB.
 * The redelivered flag lives in the file *name*, so restoring a message never rewrites it.
 */
export function encodeMessageFile(message: StoredMessage): Buffer {
  const envelope: MessageEnvelope = {
    contentType: message.contentType,
    contentEncoding: message.contentEncoding,
    headers: message.headers,
    properties: message.properties,
    exchange: message.exchange,
    routingKey: message.routingKey,
    deliveryTag: message.deliveryTag,
  };
  return Buffer.concat([Buffer.from(MAGIC, 'utf8'), Buffer.from(`${JSON.stringify(envelope)}\n`, 'utf8'), message.body]);
}

export function decodeMessageFile(data: Buffer, redelivered: boolean): StoredMessage {
  const magic = Buffer.from(MAGIC, 'utf8');
  if (data.length < magic.length || !data.subarray(0, magic.length).equals(magic)) {
    throw new UnreadableMessageFile('it does not start with the kq-fs-message/1 header');
  }
  const end = data.indexOf(0x0a, magic.length);
  if (end < 0) throw new UnreadableMessageFile('the envelope line is not terminated');
  let envelope: MessageEnvelope;
  try {
    envelope = JSON.parse(data.subarray(magic.length, end).toString('utf8')) as MessageEnvelope;
  } catch (error) {
    throw new UnreadableMessageFile(`the envelope is not JSON (${(error as Error).message})`);
  }
  if (typeof envelope !== 'object' || envelope === null || typeof envelope.deliveryTag !== 'string') {
    throw new UnreadableMessageFile('the envelope lacks a delivery tag');
  }
  return {
    body: Buffer.from(data.subarray(end + 1)),
    contentType: String(envelope.contentType ?? ''),
    contentEncoding: String(envelope.contentEncoding ?? ''),
    headers: envelope.headers ?? {},
    properties: envelope.properties ?? {},
    exchange: String(envelope.exchange ?? ''),
    routingKey: String(envelope.routingKey ?? ''),
    deliveryTag: envelope.deliveryTag,
    redelivered,
  };
}
