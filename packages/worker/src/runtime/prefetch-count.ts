/** What the consumer's prefetch follows: the pool, its autoscaler and the ETA tasks held. */
export interface PrefetchInputs {
  readonly multiplier: number;
  readonly poolSize: number;
  /** The autoscaler's `max`, or null without one. */
  readonly autoscaleMax: number | null;
  readonly etaHeld: number;
  /** `workerEtaTaskLimit`: null or 0 for none. */
  readonly etaTaskLimit: number | null;
}

/**
 * The consumer's prefetch: pool size × multiplier, plus one per ETA task held. An autoscaled pool must be able to
 * see more work than it has children, or it never grows: below `max` it prefetches at least one message more than
 * its size (this matters with multiplier 1), and at size 0 one child's worth. Celery 5.6's worker_eta_task_limit is
 * Kombu QoS's max_prefetch: the bump stops there, so once that many messages are held the broker keeps the rest (no
 * unbounded ETA memory).
 */
export function prefetchCount({ multiplier, poolSize, autoscaleMax, etaHeld, etaTaskLimit }: PrefetchInputs): number {
  if (multiplier === 0) return 0;
  let prefetch = Math.max(1, poolSize) * multiplier;
  if (autoscaleMax !== null && poolSize < autoscaleMax) prefetch = Math.max(prefetch, poolSize + 1);
  const bumped = prefetch + etaHeld;
  return etaTaskLimit !== null && etaTaskLimit > 0 ? Math.min(bumped, etaTaskLimit) : bumped;
}
