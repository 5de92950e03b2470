/** Kombu's default priority buckets on virtual transports: 0–2 → 0, 3–5 → 3, 6–8 → 6, 9 → 9. */
export const DEFAULT_PRIORITY_STEPS: readonly number[] = [0, 3, 6, 9];

/** The highest priority a virtual transport distinguishes (Kombu clamps to 0..9). */
export const VIRTUAL_MAX_PRIORITY = 9;

/**
 * The bucket a message of `priority` goes to: the largest step not above it. Missing, non-integer or
 * out-of-range priorities are clamped the way Kombu does (non-int → 0, then into 0..9).
 */
export function priorityStep(priority: unknown, steps: readonly number[] = DEFAULT_PRIORITY_STEPS): number {
  let value = typeof priority === 'number' && Number.isFinite(priority) ? Math.trunc(priority) : 0;
  value = Math.min(Math.max(value, 0), VIRTUAL_MAX_PRIORITY);
  let bucket = steps[0] ?? 0;
  for (const step of steps) if (step <= value) bucket = step;
  return bucket;
}
