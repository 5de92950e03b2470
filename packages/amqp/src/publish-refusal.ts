import type { Queue } from '@kq/core';

/**
 * Why the broker may have nacked a publish, worded for the error. A basic.nack carries no reason, so the cause is
 * inferred from the queues the message routes to, as declared through this transport:
 * - a queue declared with x-overflow=reject-publish(-dlx) nacks while it is full;
 * - a quorum (or stream) queue nacks while it has no leader: after its leader's node was lost, until the surviving
 *   nodes have elected a new one (on RabbitMQ 3.10 a channel that published meanwhile may keep being refused; the
 *   publisher replaces it).
 * Queues this transport did not declare are unknown, so then every cause is named.
 */
export function publishRefusalReason(queues: readonly Queue[]): string {
  const rejecting = queues.filter((queue) => String(queue.toArguments()['x-overflow'] ?? '').startsWith('reject-publish'));
  const replicated = queues.filter((queue) => ['quorum', 'stream'].includes(String(queue.toArguments()['x-queue-type'] ?? '')));
  const causes: string[] = [];
  if (replicated.length > 0) {
    causes.push(
      `${names(replicated)} has no leader yet (its leader's node was lost and the other nodes are electing a new one); ` +
        `kq publishes on a fresh channel, and publishes succeed once a new leader is elected`,
    );
  }
  if (rejecting.length > 0) {
    causes.push(`${names(rejecting)} is full (x-overflow=${String(rejecting[0]?.toArguments()['x-overflow'])})`);
  }
  if (causes.length === 0) {
    return (
      'a queue it routes to has no leader yet (a quorum queue whose leader\'s node was lost; publishes succeed once a new ' +
      'leader is elected), or is full with x-overflow=reject-publish, or the broker could not store it'
    );
  }
  return causes.join(', or ');
}

function names(queues: readonly Queue[]): string {
  const quoted = queues.map((queue) => JSON.stringify(queue.name));
  return queues.length === 1 ? `queue ${quoted[0]}` : `one of the queues ${quoted.join(', ')}`;
}
