// Which lists a native claim round takes from, and how many moves it sends to each (native-claim.ts).
import type { KeyLayout } from './key-layout';

/** Moves sent beyond a list's last known length: what producers may have added since. */
export const SLACK = 16;
/**
 * The length of a list never measured. A small integer, not Infinity: lengths stay one kind of array for V8, where
 * Infinity made the first claims' arrays doubles and the claim optimized on them was thrown away at the next.
 */
export const UNMEASURED = -1;

/** A list a claim watches: a queue's list at one priority step. */
export interface WatchedList {
  queue: string;
  step: number;
  key: string;
}

/** A list a claim round moves messages from, and how many moves it sends there. */
export interface Source extends WatchedList {
  count: number;
}

/** Every list of `queues` (each once), most urgent step first. */
export function watchedLists(layout: Pick<KeyLayout, 'steps' | 'listKey'>, queues: readonly string[]): WatchedList[] {
  const unique = [...new Set(queues)];
  const watched: WatchedList[] = [];
  for (const step of layout.steps) for (const queue of unique) watched.push({ queue, step, key: layout.listKey(queue, step) });
  return watched;
}

/** `room` shared out over the sources in order (the first ones get the remainder). */
function share(sources: Source[], room: number): Source[] {
  const each = Math.floor(room / sources.length);
  const extra = room % sources.length;
  return sources.map((source, index) => ({ ...source, count: each + (index < extra ? 1 : 0) })).filter((source) => source.count > 0);
}

/**
 * Where the next round takes from: the most urgent priority step with messages (or never measured), `room`
 * shared over its queues that have messages, each list asked for at most its length plus SLACK. When every list was empty, a `probe` (a claim's first round) asks the most urgent lists for SLACK each, as
 * messages may have come since; otherwise nothing.
 */
export function planFrom(
  watched: readonly WatchedList[],
  lengths: readonly number[],
  room: number,
  probe: boolean,
): Source[] {
  // Every return is this one array (one allocation site): a literal `[]` here and a `map` result there are two kinds
  // of array to V8, and the claim optimized on one was thrown away at the other.
  const plan: Source[] = [];
  if (room <= 0) return plan;
  let has = (index: number): boolean => {
    const length = lengths[index] ?? 0;
    return length > 0 || length === UNMEASURED;
  };
  let firstStep = watched.find((_, index) => has(index))?.step;
  if (firstStep === undefined) {
    if (!probe) return plan;
    firstStep = watched[0]?.step;
    has = () => true;
  }
  const limit = new Map<string, number>();
  const lists = watched.flatMap((list, index) => {
    if (list.step !== firstStep || !has(index)) return [];
    const length = lengths[index] ?? 0;
    if (length !== UNMEASURED) limit.set(list.key, length + SLACK);
    return [{ ...list, count: 0 }];
  });
  for (const source of share(lists, room)) plan.push({ ...source, count: Math.min(source.count, limit.get(source.key) ?? source.count) });
  return plan;
}
