import type { TaskState } from './result-meta';

/**
 * A result as Celery's `as_tuple()` writes it: `[[id, parentTuple | null], children | null]` — `children` is a list of
 * such tuples for a group result, null for a single task. Saved group metas and `celery.chord_unlock` carry them.
 */
export type ResultTuple = [[string, ResultTuple | null], ResultTuple[] | null];

/** One finished header task of a chord, as a native join keeps it until the chord completes. */
export interface ChordPart {
  readonly taskId: string;
  readonly state: TaskState;
  /** The stored result: the return value, or the exception info of a failure. */
  readonly result: unknown;
}

/**
 * Celery's native chord join (the Redis backend's `on_chord_part_return`): each header task records its outcome and
 * the one that completes the count learns it did, with every part. The counter is the backend's, so header tasks
 * run by Python and by kq workers complete the same chord.
 */
export interface ChordJoin {
  /** The number of header tasks (Celery's `set_chord_size`, the `<gid>.s` key), set by whoever sends the chord. */
  setChordSize(groupId: string, size: number, expiresMs: number): Promise<void>;
  /** Counts one more part than the size says (Celery's `add_to_chord`, the `<gid>.t` key). */
  addToChord(groupId: string): Promise<void>;
  /**
   * Records a header task's outcome. When it completed the chord, resolves to every part in group-index order and
   * the join's state is cleared (exactly one caller gets the parts); else to null.
   */
  addPart(groupId: string, part: ChordPart, groupIndex: number | null, expiresMs: number): Promise<ChordPart[] | null>;
}

/** Where a backend keeps group results (Celery's `save_group`: `celery-taskset-meta-<gid>` on key/value stores). */
export interface GroupStore {
  saveGroup(groupId: string, result: ResultTuple, expiresMs: number): Promise<void>;
  /** The saved tuple, or null when none is saved (or it expired). */
  restoreGroup(groupId: string): Promise<ResultTuple | null>;
  deleteGroup(groupId: string): Promise<void>;
}
