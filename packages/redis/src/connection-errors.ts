import { ConnectionLost, KqError, PermissionDenied, isRecoverable } from '@kq/core';

/**
 * ioredis reports a lost or unusable connection with plain Errors (no code): a command written while the socket was
 * gone, one that used up `maxRetriesPerRequest` during reconnects, one sent while a restarted Redis loads its data.
 */
const CONNECTION_FAILURES = /Connection is closed|Stream isn't writeable|max retries per request|^LOADING\b|Socket closed unexpectedly/i;
/**
 * Redis Cluster in transition: a slot half migrated (TRYAGAIN for a script whose keys are split between two nodes, or
 * ioredis giving up after bouncing between them), or no master for a slot yet (CLUSTERDOWN). The same call succeeds
 * once the migration or failover is over, so it is retried like a dropped connection, not failed for good.
 */
const CLUSTER_TRANSITIONS = /^TRYAGAIN\b|Too many Cluster redirections|^CLUSTERDOWN\b/;

/**
 * True for failures a reconnect or a moment may cure: kq's recoverable errors, socket errors, ioredis's connection
 * errors, and a cluster mid-migration or mid-failover.
 */
export function isConnectionError(error: unknown): boolean {
  if (isRecoverable(error)) return true;
  if (!(error instanceof Error)) return false;
  return error.name === 'MaxRetriesPerRequestError' || CONNECTION_FAILURES.test(error.message) || CLUSTER_TRANSITIONS.test(error.message);
}

/**
 * Rethrows ioredis's connection failures as core's `ConnectionLost`, so `Connection.ensure` and the publish retry
 * policy retry a publish through a Redis outage as they do through a RabbitMQ one; other errors pass unchanged.
 */
export function rethrowRecoverable(error: unknown): never {
  const refused = permissionDeniedOf(error);
  if (refused) throw refused;
  if (!(error instanceof KqError) && isConnectionError(error)) {
    throw new ConnectionLost(`Lost the connection to Redis (${describeError(error)}); the operation can be retried once it is back.`, {
      cause: error,
    });
  }
  throw error;
}

export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * A Redis ACL refusal (`NOPERM`) as a `PermissionDenied` naming the command, so it is reported once and not retried
 * like an outage; undefined for anything else. ioredis puts the refused command on its reply errors.
 */
export function permissionDeniedOf(error: unknown): PermissionDenied | undefined {
  if (error instanceof PermissionDenied) return error;
  if (!(error instanceof Error) || !/^NOPERM\b/.test(error.message)) return undefined;
  const sent = (error as { command?: { name?: unknown; args?: unknown } }).command;
  const named = /run the '([^']+)' command/.exec(error.message)?.[1];
  const command = (typeof sent?.name === 'string' ? sent.name : (named ?? 'a command')).toUpperCase();
  // A script's refusal names the command inside it; the script itself is EVALSHA on the wire.
  const inner = named && named.toUpperCase() !== command ? ` (${named.toUpperCase()} inside it)` : '';
  return new PermissionDenied(
    named?.toUpperCase() ?? command,
    `Redis refused ${command}${inner} for the user kq connects as: ${error.message.replace(/\s+/g, ' ')}. ` +
      'Grant it in that user\'s ACL (docs/security.md lists what kq needs).',
    { cause: error },
  );
}
