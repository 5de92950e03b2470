import { pyJson } from '@kq/core';

/** What the quarantine list keeps of an envelope kq could not read or route (nothing is ever just dropped). */
export interface QuarantineEntry {
  /** The queue it was taken from ('' when it came from a sweep). */
  queue: string;
  /** The Redis key it was taken from ('' when it came from a sweep). */
  key: string;
  /** Why kq could not deliver it. */
  reason: string;
  /** The envelope exactly as it was stored. */
  raw: string;
}

/**
 * One entry of the quarantine list (`_kq.quarantine`, newest first): a JSON object with the fields above plus `at`
 * (epoch ms). Inspect it with `LRANGE`; put a repaired envelope back with `LPUSH <queue> <envelope>`.
 */
export function quarantineRecord(entry: QuarantineEntry): string {
  return pyJson({ queue: entry.queue, key: entry.key, reason: entry.reason, at: Date.now(), raw: entry.raw });
}
