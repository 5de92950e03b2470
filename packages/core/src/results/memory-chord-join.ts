import type { ChordJoin, ChordPart, GroupStore, ResultTuple } from './group-store';

interface Join {
  parts: Array<{ part: ChordPart; index: number }>;
  size: number | null;
  extra: number;
  expiresAt: number;
}

/** The memory backend's native chord join and group store: Celery's Redis layout, kept in a Map. */
export class MemoryChordJoin implements ChordJoin, GroupStore {
  readonly #joins = new Map<string, Join>();
  readonly #groups = new Map<string, { result: ResultTuple; expiresAt: number }>();

  async setChordSize(groupId: string, size: number, expiresMs: number): Promise<void> {
    const join = this.#join(groupId);
    join.size = size;
    join.expiresAt = expiresMs > 0 ? Date.now() + expiresMs : Number.POSITIVE_INFINITY;
  }

  async addToChord(groupId: string): Promise<void> {
    this.#join(groupId).extra += 1;
  }

  async addPart(groupId: string, part: ChordPart, groupIndex: number | null, expiresMs: number): Promise<ChordPart[] | null> {
    const join = this.#join(groupId);
    join.parts.push({ part, index: groupIndex ?? Number.POSITIVE_INFINITY });
    join.expiresAt = expiresMs > 0 ? Date.now() + expiresMs : Number.POSITIVE_INFINITY;
    // As Celery's Redis join: nothing happens until someone set the size, and only the part that reaches it fires.
    if (join.size === null || join.parts.length !== join.size + join.extra) return null;
    this.#joins.delete(groupId);
    // A stable sort by index, as a sorted set ordered by score.
    return join.parts.sort((a, b) => a.index - b.index).map((entry) => entry.part);
  }

  async saveGroup(groupId: string, result: ResultTuple, expiresMs: number): Promise<void> {
    this.#groups.set(groupId, { result, expiresAt: expiresMs > 0 ? Date.now() + expiresMs : Number.POSITIVE_INFINITY });
  }

  async restoreGroup(groupId: string): Promise<ResultTuple | null> {
    const saved = this.#groups.get(groupId);
    if (!saved) return null;
    if (saved.expiresAt <= Date.now()) {
      this.#groups.delete(groupId);
      return null;
    }
    return saved.result;
  }

  async deleteGroup(groupId: string): Promise<void> {
    this.#groups.delete(groupId);
  }

  #join(groupId: string): Join {
    let join = this.#joins.get(groupId);
    if (join && join.expiresAt <= Date.now()) join = undefined;
    if (!join) {
      join = { parts: [], size: null, extra: 0, expiresAt: Number.POSITIVE_INFINITY };
      this.#joins.set(groupId, join);
    }
    return join;
  }
}
