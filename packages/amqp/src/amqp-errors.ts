import {
  brandClass,
  ChannelClosed,
  ConnectionLost,
  ExchangeNotFound,
  KqError,
  PermissionDenied,
  PreconditionFailed,
  QueueNotFound,
  StaleDeliveryError,
} from '@kq/core';

/** AMQP reply codes the transport reacts to (AMQP 0-9-1 §1.9, RabbitMQ's usage). */
export const ReplyCode = {
  CONNECTION_FORCED: 320,
  ACCESS_REFUSED: 403,
  NOT_FOUND: 404,
  RESOURCE_LOCKED: 405,
  PRECONDITION_FAILED: 406,
  NOT_IMPLEMENTED: 540,
} as const;

/** The broker cancelled a consumer (its queue was deleted, or the queue's node went away). */
export class ConsumerCancelled extends KqError {
  constructor(
    readonly queue: string,
    readonly consumerTag: string,
  ) {
    super(
      `The broker cancelled consumer ${JSON.stringify(consumerTag)} of queue ${JSON.stringify(queue)} ` +
        `(the queue was deleted or its node failed). kq re-subscribes when the queue exists again; ` +
        `cancel the consumer to stop that.`,
    );
  }
}
brandClass(ConsumerCancelled, '@kq/amqp:ConsumerCancelled');

interface AmqplibError {
  message?: unknown;
  code?: unknown;
}

/** The AMQP reply code carried by an amqplib error (a channel or connection closed by the broker), if any. */
export function replyCodeOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as AmqplibError).code;
  return typeof code === 'number' ? code : undefined;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null && typeof (error as AmqplibError).message === 'string') {
    return (error as { message: string }).message;
  }
  return String(error);
}

/** The broker's own words from an amqplib close message: `... with message "NOT_FOUND - no queue 'q' in vhost '/'"`. */
export function brokerText(error: unknown): string {
  const message = messageOf(error);
  const quoted = /with message "([^"]*)"/.exec(message);
  return quoted?.[1] ?? message;
}

/**
 * True when the error means the operation's channel or connection went away underneath it (nothing the operation
 * itself did wrong): retrying on a fresh channel after reconnecting may succeed.
 */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof ConnectionLost || error instanceof ChannelClosed) return true;
  const code = replyCodeOf(error);
  if (code === ReplyCode.CONNECTION_FORCED) return true;
  if (code !== undefined) return false;
  const message = messageOf(error);
  return (
    /Channel (closed|ended|closing)|Connection (closed|closing)|no reply will be forthcoming|socket|ECONN|EPIPE|ETIMEDOUT|Heartbeat timeout/i.test(
      message,
    ) || (typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'IllegalOperationError')
  );
}

export interface OperationContext {
  /** What was being done, for the message: `declare queue "celery"`. */
  operation: string;
  /** Entity the operation named, so a 404 maps to the right `...NotFound`. */
  queue?: string;
  exchange?: string;
}

/** Maps a failure of an AMQP operation to the kq error that says what happened and what to do. */
export function toKqError(error: unknown, context: OperationContext): Error {
  if (error instanceof KqError) return error;
  const code = replyCodeOf(error);
  const text = brokerText(error);
  switch (code) {
    case ReplyCode.NOT_FOUND: {
      const missing = /no (exchange|queue) '([^']*)'/.exec(text);
      if (missing?.[1] === 'exchange') return new ExchangeNotFound(missing[2] ?? context.exchange ?? '');
      if (missing?.[1] === 'queue') return new QueueNotFound(missing[2] ?? context.queue ?? '');
      if (context.queue !== undefined) return new QueueNotFound(context.queue);
      if (context.exchange !== undefined) return new ExchangeNotFound(context.exchange);
      break;
    }
    case ReplyCode.PRECONDITION_FAILED:
      return new PreconditionFailed(
        `Cannot ${context.operation}: the broker refused it (406 PRECONDITION_FAILED: ${text}). An entity that ` +
          `already exists must be declared with the same type, flags and arguments (Celery's shared entities are ` +
          `listed in kq's docs/wire.md, section "AMQP"); delete it first to change them.`,
        { cause: error },
      );
    case ReplyCode.ACCESS_REFUSED:
      return new PermissionDenied(
        context.operation,
        `Cannot ${context.operation}: access refused (403: ${text}). Check the user's permissions on this vhost ` +
          `(rabbitmqctl set_permissions; docs/security.md lists what kq needs) and that the name does not start with ` +
          `the reserved "amq." prefix.`,
        { cause: error },
      );
    case ReplyCode.RESOURCE_LOCKED:
      return new KqError(
        `Cannot ${context.operation}: the queue is exclusive to another connection (405 RESOURCE_LOCKED: ${text}). ` +
          `Use a different queue name, or wait for that connection to close.`,
        { cause: error },
      );
    default:
      break;
  }
  if (isConnectionFailure(error)) {
    return new ConnectionLost(`Cannot ${context.operation}: the connection to the broker was lost (${text}).`, { cause: error });
  }
  return new KqError(`Cannot ${context.operation}: ${text}`, { cause: error });
}

/** A settle on a lost channel: the broker requeued the delivery already. */
export function staleDelivery(action: 'ack' | 'reject' | 'requeue', tag: number, queue: string): StaleDeliveryError {
  return new StaleDeliveryError(
    `Cannot ${action} message ${tag} from queue ${JSON.stringify(queue)}: the channel it arrived on was lost ` +
      `(connection or channel failure), and the broker has already requeued it; it will be delivered again with ` +
      `redelivered=true. Do not retry the ${action}.`,
  );
}

/** Why a consumer's channel was lost, saying what to do when RabbitMQ's consumer_timeout closed it. */
export function describeChannelLoss(tag: string, error: Error): KqError {
  const text = brokerText(error);
  if (/acknowledgement|ack.*timed out|consumer_timeout/i.test(text)) {
    return new KqError(
      `RabbitMQ closed the channel of consumer ${tag} because a delivery stayed unacknowledged longer than its ` +
        `consumer_timeout (30 min by default): ${text}. The message was requeued and the consumer resumed. Acknowledge ` +
        `sooner, or raise consumer_timeout for long ETA or acks_late tasks.`,
      { cause: error },
    );
  }
  return new KqError(`Consumer ${tag} lost its channel (${text}); resuming on a new one.`, { cause: error });
}
