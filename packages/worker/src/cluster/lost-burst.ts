/**
 * Losses in one check above this many, and above a third of the workers known, are a burst: more likely the one
 * judging fell behind (its process starved, its queue backed up) than that much of the fleet died at once.
 */
export const LOST_BURST_MIN = 5;

/** True when `lost` of `known` workers lost at once is a burst (see `LOST_BURST_MIN`). */
export function isLostBurst(lost: number, known: number): boolean {
  return lost > LOST_BURST_MIN && lost * 3 > known;
}
