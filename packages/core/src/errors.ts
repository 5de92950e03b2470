import { brandClass } from './class-brand';
import { installCommand } from './package-manager';

/**
 * Every error kq raises on purpose is a `KqError`. Messages say what happened *and* what to do about it.
 *
 * `recoverable` marks errors that a retry may cure (a dropped connection, a broker restart):
 * `Connection.ensure()` retries those and lets everything else through at once.
 */
export class KqError extends Error {
  /** True when retrying the operation (after reconnecting) may succeed. */
  readonly recoverable: boolean = false;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The content type is not in the consumer's accept list, or is one kq never decodes (pickle) even when accepted; the
 * body was not decoded.
 */
export class ContentDisallowed extends KqError {
  constructor(
    readonly contentType: string,
    readonly accept: readonly string[],
    /** Why, when it is not the accept list (the default message says to add the type to it). */
    message?: string,
  ) {
    super(
      message ??
        `Refusing to decode content of type ${JSON.stringify(contentType)}: it is not in the accept list ` +
          `[${accept.join(', ')}]. Add it to \`accept\` if this content is trusted.`,
    );
  }
}

/** The body could not be decoded with the serializer its content type names. */
export class DecodeError extends KqError {}

/**
 * A signed message (the `auth` serializer, Celery's message signing) was refused — unsigned, signed by a certificate
 * not in the store, or changed after it was signed — or the signing material (key, certificate, store) cannot be
 * used. Celery's `celery.exceptions.SecurityError`.
 */
export class SecurityError extends KqError {}

/** A value could not be serialized (a cycle, a BigInt for JSON, an unknown serializer...). */
export class EncodeError extends KqError {}

/** No serializer or compression method is registered under that name or content type. */
export class SerializerNotRegistered extends KqError {}

/** An optional dependency (msgpack, a transport package) is needed but not installed. */
export class OptionalDependencyMissing extends KqError {
  constructor(
    readonly packageName: string,
    purpose: string,
    options?: { cause?: unknown },
  ) {
    super(`${purpose} needs the package ${packageName}, which is not installed. Run: ${installCommand(packageName)}`, options);
  }
}

/** A delivery was acked, rejected or requeued twice, or settled after being consumed with noAck. */
export class MessageStateError extends KqError {}

/**
 * The transport no longer recognises this delivery as held by us: its lease ran out and it was restored to the
 * queue, so another consumer may already own it. The settle is refused rather than silently applied (fencing).
 */
export class StaleDeliveryError extends KqError {}

/**
 * A message body is over the `maxMessageSize` limit: refused on publish before anything reaches the broker, and on
 * receive rejected (dead-lettered where the queue has that) before its body is decoded. A compressed body counts
 * twice: as sent, and as it inflates, so a small zip bomb is refused too.
 */
export class MessageTooLarge extends KqError {
  constructor(
    /** Bytes of the body (as sent; when `inflated`, at least the bytes it would inflate to). */
    readonly size: number,
    readonly limit: number,
    readonly inflated = false,
  ) {
    super(
      `The message body ${inflated ? `inflates to more than ${formatBytes(limit)}` : `is ${formatBytes(size)}`}, over the ` +
        `maxMessageSize limit of ${formatBytes(limit)}. Send a reference to large data (a URL, a storage key) instead of ` +
        `the data, or raise maxMessageSize (bytes; null for no limit) on the senders and the workers alike.`,
    );
  }
}

function formatBytes(bytes: number): string {
  return `${bytes.toLocaleString('en-US')} bytes`;
}

/** An exchange that was never declared was named in a publish or bind. */
export class ExchangeNotFound extends KqError {
  constructor(readonly exchange: string) {
    super(
      `Exchange ${JSON.stringify(exchange)} has not been declared. Declare it first ` +
        `(channel.declareExchange(new Exchange(${JSON.stringify(exchange)}, { type: 'direct' }))) or publish to the default exchange ''.`,
    );
  }
}

/** A queue that does not exist was named where one must exist (passive declare, get, consume). */
export class QueueNotFound extends KqError {
  constructor(readonly queue: string) {
    super(`Queue ${JSON.stringify(queue)} does not exist. Declare it first with channel.declareQueue(new Queue(...)).`);
  }
}

/** A queue's options contradict each other or what its broker supports; the message says which to change. */
export class InvalidQueueOptions extends KqError {}

/** An entity was re-declared with different flags or arguments than it already has. */
export class PreconditionFailed extends KqError {}

/** A message published with `mandatory: true` matched no queue. */
export class UnroutableError extends KqError {
  constructor(
    readonly exchange: string,
    readonly routingKey: string,
  ) {
    super(
      `No queue is bound to exchange ${JSON.stringify(exchange)} with a key matching ${JSON.stringify(routingKey)}; ` +
        `the message was not delivered. Declare and bind a queue before publishing.`,
    );
  }
}

/** The broker refused a published message (publisher-confirm nack, or a rejecting queue overflow policy). */
export class PublishRejected extends KqError {}

/** The transport does not support a requested feature; the message names the capability. */
export class UnsupportedFeature extends KqError {}

/** Operation on a channel (or consumer) that has been closed. */
export class ChannelClosed extends KqError {
  override readonly recoverable = true;
}

/** The connection to the broker failed or was lost. Retrying after a reconnect may succeed. */
export class ConnectionLost extends KqError {
  override readonly recoverable = true;
}

/**
 * The broker could not be reached within the connect retry policy. Not retried again by `ensure()`: the policy that
 * gave up was the retry.
 */
export class BrokerUnreachable extends KqError {
  constructor(
    readonly url: string,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    const reason = options?.cause instanceof Error ? options.cause.message : String(options?.cause ?? 'unknown error');
    super(
      `Cannot connect to ${url}: ${reason}. Is the broker running there? ` +
        `(gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}; set the URL with -b / KQ_BROKER_URL or the app's broker option)`,
      options,
    );
  }
}

/**
 * A TLS connection to the broker or backend failed in a way no retry cures: the server's certificate is not signed by
 * a trusted CA, has expired, is for another host; the server refused the client's certificate; or it does not speak
 * TLS on that port. Never retried: a reconnect loop would hide the cause. `code` is Node's or OpenSSL's.
 */
export class TlsFailure extends KqError {
  constructor(
    readonly target: string,
    readonly code: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`TLS connection to ${target} failed: ${reason} (${code})`, options);
  }
}

/**
 * The broker refused a command because the user kq connects as may not run it (a Redis ACL `NOPERM`, a RabbitMQ
 * `ACCESS_REFUSED` on a resource). Not retried: the same user is refused again. `command` names what was refused.
 */
export class PermissionDenied extends KqError {
  constructor(
    readonly command: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** An operation did not complete in the time allowed. */
export class OperationTimeout extends KqError {}

/** No transport is registered for the URL's scheme. */
export class UnknownTransport extends KqError {
  constructor(readonly scheme: string, known: readonly string[]) {
    super(
      `No transport is registered for ${JSON.stringify(scheme + '://')}. Known schemes: ${known.join(', ')}. ` +
        `A custom transport is added with registerTransport().`,
    );
  }
}

/** The URL's transport lives in a package that is not installed. */
export class TransportNotInstalled extends OptionalDependencyMissing {
  constructor(
    readonly scheme: string,
    packageName: string,
    options?: { cause?: unknown },
  ) {
    super(packageName, `The ${scheme}:// transport`, options);
  }
}

/**
 * A second copy of a kq package loaded in a process that already had one (see `claimPackageCopy`). Two copies hold two
 * of every class, and kq's checks between them fail without a word: periodic tasks never start, cluster steps run
 * twice, log lines lose their trace ids.
 */
export class DuplicatePackageCopies extends KqError {
  constructor(
    readonly packageName: string,
    readonly firstPath: string,
    readonly secondPath: string,
  ) {
    super(
      `${packageName} is loaded twice in this process, from ${firstPath} and from ${secondPath}; two copies of its classes ` +
        `break kq's checks. Make every import of ${packageName} resolve to one file: start the app with the \`kq\` bin of ` +
        `the install your app imports (run from a checkout, it loads the sources for the app too), import kq packages the ` +
        `same way everywhere (on Node older than 20.19, require() and import get different builds), and keep one install ` +
        `(\`npm ls ${packageName}\` lists them; \`npm dedupe\`).`,
    );
  }
}

/**
 * True for the reasons a message's body is refused unread: content not accepted, a signature that does not verify, a
 * body past the size limit, or one that cannot be decoded. The consumer rejects such a message; the worker stores the
 * task's FAILURE from it.
 */
export function isUnreadableContent(error: unknown): error is ContentDisallowed | DecodeError | SecurityError | MessageTooLarge {
  return error instanceof ContentDisallowed || error instanceof DecodeError || error instanceof SecurityError || error instanceof MessageTooLarge;
}

/** True for errors that `Connection.ensure()` should retry. */
export function isRecoverable(error: unknown): boolean {
  if (error instanceof KqError) return error.recoverable;
  if (typeof error !== 'object' || error === null) return false;
  // Socket-level failures from the drivers (ioredis, amqplib) that never became a KqError.
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && RECOVERABLE_SOCKET_CODES.has(code);
}

const RECOVERABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTCONN',
]);

// Every error class here answers `instanceof` for its instances from another copy of @kq/core too (see brandClass).
for (const [name, errorClass] of Object.entries({
  KqError,
  ContentDisallowed,
  DecodeError,
  EncodeError,
  SerializerNotRegistered,
  OptionalDependencyMissing,
  MessageStateError,
  MessageTooLarge,
  StaleDeliveryError,
  ExchangeNotFound,
  QueueNotFound,
  InvalidQueueOptions,
  PreconditionFailed,
  UnroutableError,
  PublishRejected,
  UnsupportedFeature,
  ChannelClosed,
  ConnectionLost,
  BrokerUnreachable,
  OperationTimeout,
  UnknownTransport,
  TransportNotInstalled,
  DuplicatePackageCopies,
  SecurityError,
  TlsFailure,
  PermissionDenied,
})) {
  brandClass(errorClass, `@kq/core:${name}`);
}
