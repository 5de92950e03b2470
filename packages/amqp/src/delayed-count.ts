import { QueueNotFound, type DelayedCount } from '@kq/core';
import type { DelayLadder } from './delay-ladder';

/**
 * Messages waiting in the delay ladder: the sum of its level queues' message counts (passive declares). No split by
 * queue: a message's target is in its routing key, which only consuming it would read. A level not declared holds
 * nothing (no top level: no ladder at all). The ladder is the vhost's (Celery 5.5+ shares it), so the count is every client's delayed messages.
 */
export async function countLadder(ladder: DelayLadder, messageCount: (queue: string) => Promise<number>): Promise<DelayedCount> {
  let total = 0;
  for (const [index, level] of ladder.levels.entries()) {
    try {
      total += await messageCount(level.name);
    } catch (error) {
      if (!(error instanceof QueueNotFound)) throw error;
      // The ladder is declared whole (kq and Kombu alike): no top level, no ladder — spare 27 more refused declares.
      if (index === 0) break;
    }
  }
  return { total };
}
