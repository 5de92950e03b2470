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
 * A Redis ACL refusal as a `PermissionDenied` naming the command, so it is reported once and not retried like an
 * outage; undefined for anything else. A command sent directly is refused with `NOPERM` (ioredis puts the command on
 * the error); one run by a Lua script with "ERR The user executing the script can't run this command", naming only
 * the script's line, so the command is read from `script`'s source at that line.
 */
export function permissionDeniedOf(error: unknown, script?: { name: string; source: string }): PermissionDenied | undefined {
  if (error instanceof PermissionDenied) return error;
  if (!(error instanceof Error)) return undefined;
  const text = error.message.replace(/\s+/g, ' ');
  const fix = "Grant it in that user's ACL (docs/security.md lists what kq needs).";
  if (/^NOPERM\b/.test(error.message)) {
    const sent = (error as { command?: { name?: unknown } }).command;
    const named = /run the '([^']+)' command/.exec(error.message)?.[1];
    const command = (named ?? (typeof sent?.name === 'string' ? sent.name : 'a command')).toUpperCase();
    return new PermissionDenied(command, `Redis refused ${command} for the user kq connects as: ${text}. ${fix}`, { cause: error });
  }
  const line = /^ERR The user executing the script can't run this command.*@user_script:(\d+)/.exec(error.message)?.[1];
  if (line === undefined) return undefined;
  const source = script?.source.split('\n')[Number(line) - 1] ?? '';
  const command = (/redis\.p?call\(\s*'([A-Za-z]+)'/.exec(source)?.[1] ?? 'a command').toUpperCase();
  const where = script ? ` in kq's ${script.name} script` : ' in a Lua script';
  return new PermissionDenied(command, `Redis refused ${command}${where} for the user kq connects as: ${text}. ${fix}`, { cause: error });
}
