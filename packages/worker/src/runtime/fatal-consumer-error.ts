import { PermissionDenied, TlsFailure } from '@kq/core';

/**
 * The line a worker logs before stopping for good on a consumer error, or undefined when the error is one a retry
 * can cure. A command the broker user may not run (`PermissionDenied`) and a reconnect that failed on TLS (a
 * certificate rotated to one this worker cannot trust) fail again on every retry, and a worker that stays up
 * consuming nothing looks healthy while it is not.
 */
export function fatalConsumerError(error: Error): string | undefined {
  if (error instanceof PermissionDenied) return 'Stopping: this worker cannot consume until the broker user is granted that command.';
  if (error instanceof TlsFailure) return 'Stopping: this worker cannot reach the broker until its TLS settings or certificate are fixed.';
  return undefined;
}
