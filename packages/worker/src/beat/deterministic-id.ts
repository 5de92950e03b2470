import { createHash } from 'node:crypto';

/** RFC 4122 namespace of kq's derived task ids (a fixed random uuid, so ids never collide with other v5 users). */
const KQ_NAMESPACE = Buffer.from('6b71a6f0c2d44f0c9a3e5b1d7c2e8f41', 'hex');

/**
 * A name-based (version 5, SHA-1) UUID of `parts`: the same parts always give the same id, in every process. Beat
 * and periodic tasks use it so that a message published twice for the same tick or step carries the same task id,
 * which makes a duplicate detectable (and a result-backend lookup idempotent).
 */
export function deterministicTaskId(...parts: readonly (string | number)[]): string {
  const hash = createHash('sha1').update(KQ_NAMESPACE).update(parts.map(String).join('\u0000'), 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The task id kq beat gives the message of `entry`'s tick at `tickMs` in schedule `group`. */
export function beatTaskId(group: string, entry: string, tickMs: number): string {
  return deterministicTaskId('beat', group, entry, tickMs);
}
