import type { DeliveryInfo, DeliveryInit, DeliveryMode, MessageProperties, OutgoingMessage } from '@kq/core';
import { decodesWithThisCopy, type AmqplibMessage, type AmqplibOptions } from './amqplib-loader';
import type { DelayLadder } from './delay-ladder';
import { fromDecodedFieldTable, fromFieldTable, toFieldTable } from './field-table';

/** When amqplib decodes headers with this copy's decoder, it has recorded which tables need converting. */
const fromHeaderTable = decodesWithThisCopy ? fromDecodedFieldTable : fromFieldTable;

/** amqplib publish options for a kq message: properties in AMQP's names, headers tagged as py-amqp writes them. */
export function toPublishOptions(
  message: OutgoingMessage,
  mandatory: boolean,
  extraHeaders?: Readonly<Record<string, unknown>>,
  dropExpiration = false,
): AmqplibOptions.Publish {
  const props = message.properties;
  const options: AmqplibOptions.Publish = {
    headers: toFieldTable(extraHeaders ? { ...message.headers, ...extraHeaders } : message.headers),
    mandatory,
  };
  if (message.contentType) options.contentType = message.contentType;
  if (message.contentEncoding) options.contentEncoding = message.contentEncoding;
  if (props.deliveryMode !== undefined) options.deliveryMode = props.deliveryMode;
  if (props.priority !== undefined && Number.isFinite(props.priority)) {
    // AMQP priority is an octet; RabbitMQ caps it at the queue's x-max-priority anyway.
    options.priority = Math.min(255, Math.max(0, Math.trunc(props.priority)));
  }
  if (props.correlationId !== undefined) options.correlationId = props.correlationId;
  if (props.replyTo !== undefined) options.replyTo = props.replyTo;
  if (props.expiration !== undefined && !dropExpiration) options.expiration = String(props.expiration);
  if (props.messageId !== undefined) options.messageId = props.messageId;
  if (props.timestamp !== undefined && Number.isFinite(props.timestamp) && props.timestamp >= 0) {
    // An AMQP timestamp is whole seconds (amqplib would throw on a fraction).
    options.timestamp = Math.floor(props.timestamp);
  }
  if (props.type !== undefined) options.type = props.type;
  if (props.userId !== undefined) options.userId = props.userId;
  if (props.appId !== undefined) options.appId = props.appId;
  return options;
}

/** The kq view of a message amqplib received from `queue`. */
export function toDeliveryInit(
  message: AmqplibMessage,
  queue: string,
  consumerTag: string | undefined,
  noAck: boolean,
  ladder: DelayLadder,
): DeliveryInit {
  const { fields, properties } = message;
  const decoded = properties.headers ? fromHeaderTable(properties.headers) : {};
  const { headers, exchange, routingKey } = ladder.strip(decoded, fields.routingKey);
  const deliveryInfo: DeliveryInfo = {
    exchange: exchange ?? fields.exchange,
    routingKey,
    queue,
    redelivered: fields.redelivered,
    deliveryTag: String(fields.deliveryTag),
  };
  if (consumerTag !== undefined) deliveryInfo.consumerTag = consumerTag;
  const deliveryCount = deliveryCountOf(headers);
  if (deliveryCount !== undefined) deliveryInfo.deliveryCount = deliveryCount;
  return {
    body: message.content,
    contentType: stringOr(properties.contentType, ''),
    contentEncoding: stringOr(properties.contentEncoding, ''),
    headers,
    properties: toMessageProperties(properties),
    deliveryInfo,
    noAck,
  };
}

/**
 * How many times the broker says the message was delivered (or dead-lettered) before: a quorum queue's
 * `x-delivery-count`, else the sum of the `x-death` counts (the ladder's own hops are already removed).
 */
export function deliveryCountOf(headers: Readonly<Record<string, unknown>>): number | undefined {
  const quorum = headers['x-delivery-count'];
  if (typeof quorum === 'number' && Number.isFinite(quorum)) return quorum;
  const deaths = headers['x-death'];
  if (!Array.isArray(deaths)) return undefined;
  let total = 0;
  for (const death of deaths) {
    const count = typeof death === 'object' && death !== null ? (death as { count?: unknown }).count : undefined;
    if (typeof count === 'number' && Number.isFinite(count)) total += count;
  }
  return total;
}

function toMessageProperties(source: AmqplibMessage['properties']): MessageProperties {
  const props: MessageProperties = {};
  const deliveryMode: unknown = source.deliveryMode;
  if (deliveryMode === 1 || deliveryMode === 2) props.deliveryMode = deliveryMode as DeliveryMode;
  if (typeof source.priority === 'number') props.priority = source.priority;
  if (typeof source.correlationId === 'string') props.correlationId = source.correlationId;
  if (typeof source.replyTo === 'string') props.replyTo = source.replyTo;
  if (typeof source.expiration === 'string') props.expiration = source.expiration;
  if (typeof source.messageId === 'string') props.messageId = source.messageId;
  if (typeof source.timestamp === 'number') props.timestamp = source.timestamp;
  if (typeof source.type === 'string') props.type = source.type;
  if (typeof source.userId === 'string') props.userId = source.userId;
  if (typeof source.appId === 'string') props.appId = source.appId;
  return props;
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}
