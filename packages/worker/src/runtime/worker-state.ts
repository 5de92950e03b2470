import { LimitedSet } from '@kq/core';
import type { HeldTask } from './held-task';
import { RecentIds } from './recent-ids';
import { RevokedStamps } from './revoked-stamps';

/**
 * What a worker knows about its tasks (Celery's `worker.state`): the revoked set (shared with peers through
 * Mingle and `hello`), requests reserved and running, and counters for `inspect stats`.
 */
export class WorkerState {
  /** Revoked task ids; Celery's defaults: 50 000 ids, kept 3 hours. */
  readonly revoked = new LimitedSet<string>({
    maxlen: Number(process.env['CELERY_WORKER_REVOKES_MAX'] ?? 50_000),
    expires: Number(process.env['CELERY_WORKER_REVOKE_EXPIRES'] ?? 10_800),
  });
  /** Stamp values revoked by `revoke_by_stamped_headers`. */
  readonly revokedStamps = new RevokedStamps();
  /**
   * Ids of tasks whose run succeeded here lately, marked the moment the run returns (before its result is stored):
   * a redelivered copy of one — its ack lost to a lease that ran out while the run blocked the event loop — is
   * acknowledged instead of run again.
   */
  readonly succeeded = new RecentIds({ maxlen: 10_000, expires: 3600 });
  /** Received and not yet finished (includes active and ETA-held). */
  readonly reserved = new Set<HeldTask>();
  /** Running now, by task id. */
  readonly active = new Map<string, HeldTask>();
  /** Tasks accepted per task name (`inspect stats` → total). */
  readonly total = new Map<string, number>();
  processed = 0;
  readonly startedAt = Date.now();

  taskAccepted(request: HeldTask): void {
    this.active.set(request.id, request);
    this.processed++;
    this.total.set(request.name, (this.total.get(request.name) ?? 0) + 1);
  }

  taskReady(request: HeldTask): void {
    this.active.delete(request.id);
    this.reserved.delete(request);
  }
}
