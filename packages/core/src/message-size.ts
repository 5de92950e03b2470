import { KqError, MessageTooLarge } from './errors';

/**
 * The default `maxMessageSize`: 64 MiB. Far above what a task message needs (arguments are meant to be references to
 * data, not the data) and far below Redis's 512 MB strings (RabbitMQ has its own `max_message_size`, which may be
 * lower); it bounds the memory one message can take, and what a compressed body may inflate to.
 */
export const DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024;

/** Throws {@link MessageTooLarge} when `body` is over `limit` bytes (null or undefined: no limit). */
export function assertMessageSize(body: Buffer, limit: number | null | undefined): void {
  if (limit !== null && limit !== undefined && body.length > limit) throw new MessageTooLarge(body.length, limit);
}

/** Checks a `maxMessageSize` setting: a positive integer of bytes, or null for none. */
export function validMaxMessageSize(value: unknown, where: string): number | null {
  if (value === null) return null;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  throw new KqError(`${where} maxMessageSize must be a positive whole number of bytes, or null for no limit; got ${String(value)}.`);
}
