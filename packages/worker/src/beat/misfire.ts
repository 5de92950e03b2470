import type { ScheduleEntry } from './schedule-entry';

/** What a leader does for one entry now: the ticks to send (ascending) and the tick to record as the last handled. */
export interface TickPlan {
  /** Ticks to send a message for, oldest first. */
  send: number[];
  /** The latest due tick, recorded once everything before it is sent (null: nothing is due). */
  record: number | null;
  /** Due ticks that are not sent (misfired under `skip`/`run-once`, or beyond `maxCatchUp`). */
  dropped: number;
  /** True when more ticks were due than `maxCatchUp` and the oldest were not even counted. */
  truncated: boolean;
}

/**
 * Plans the due ticks of `entry` after `lastMs` (the last recorded tick) up to `nowMs`. Ticks late by at most the
 * entry's grace are sent whatever the policy; later ones follow the misfire policy (see `MisfirePolicy`). At most
 * `maxCatchUp` ticks are considered — the latest ones.
 */
export function planTicks(entry: ScheduleEntry, lastMs: number, nowMs: number, maxCatchUp: number): TickPlan {
  const { ticks, more } = entry.ticksBetween(lastMs, nowMs, Math.max(1, maxCatchUp));
  const latest = ticks[ticks.length - 1];
  if (latest === undefined) return { send: [], record: null, dropped: 0, truncated: false };
  const onTimeFrom = nowMs - entry.misfireGraceMs;
  const late = ticks.filter((tick) => tick < onTimeFrom);
  const onTime = ticks.filter((tick) => tick >= onTimeFrom);
  let send: number[];
  switch (entry.misfire) {
    case 'catch-up':
      send = ticks;
      break;
    case 'run-once': {
      const lastLate = late[late.length - 1];
      send = lastLate === undefined ? onTime : [lastLate, ...onTime];
      break;
    }
    case 'skip':
      send = onTime;
      break;
  }
  return { send, record: latest, dropped: ticks.length - send.length, truncated: more };
}
