import { DecodeError, documentValue, parseDocument, pyJson, type ChordJoin, type ChordPart, type GroupStore, type ResultTuple, type TaskState } from '@kq/core';
import type { RedisClient } from './connection-factory';

export interface RedisChordStoreOptions {
  /** Celery's `result_chord_ordered` (default true): a sorted set, in group-index order; false: a list. */
  ordered?: boolean;
  /** Redis Cluster: the group id is the keys' hash tag (`celery-taskset-meta-{<gid>}.j`), so one MULTI reaches them all. */
  hashTagged?: boolean;
}

/**
 * Celery's Redis chord join and group store, key for key, so a chord whose header runs partly on Python and partly
 * on kq workers completes either way: each part is `ZADD <prefix>celery-taskset-meta-<gid>.j` (score: its group
 * index) of `[1, id, state, result]` in one MULTI with the reads of the `.t` (extra parts) and `.s` (size) counters;
 * the part that makes the count reach size + extra reads them all and deletes the three keys.
 */
export class RedisChordStore implements ChordJoin, GroupStore {
  readonly #client: RedisClient;
  readonly #groupKeyPrefix: string;
  readonly #ordered: boolean;
  readonly #hashTagged: boolean;

  constructor(client: RedisClient, groupKeyPrefix: string, options: RedisChordStoreOptions = {}) {
    this.#client = client;
    this.#groupKeyPrefix = groupKeyPrefix;
    this.#ordered = options.ordered ?? true;
    this.#hashTagged = options.hashTagged ?? false;
  }

  /** `celery-taskset-meta-<gid>` (on a cluster `…-{<gid>}`) followed by `suffix` (`.j`, `.t`, `.s` or nothing: the saved group). */
  keyFor(groupId: string, suffix = ''): string {
    return this.#hashTagged ? `${this.#groupKeyPrefix}{${groupId}}${suffix}` : `${this.#groupKeyPrefix}${groupId}${suffix}`;
  }

  async setChordSize(groupId: string, size: number, expiresMs: number): Promise<void> {
    // Celery's `set`: SETEX with the result expiry, and a PUBLISH like every key its backend writes.
    const key = this.keyFor(groupId, '.s');
    const seconds = Math.ceil(expiresMs / 1000);
    const multi = this.#client.multi();
    if (seconds > 0) multi.setex(key, seconds, String(size));
    else multi.set(key, String(size));
    await multi.publish(key, String(size)).exec();
  }

  async addToChord(groupId: string): Promise<void> {
    await this.#client.incr(this.keyFor(groupId, '.t'));
  }

  async addPart(groupId: string, part: ChordPart, groupIndex: number | null, expiresMs: number): Promise<ChordPart[] | null> {
    const jkey = this.keyFor(groupId, '.j');
    const tkey = this.keyFor(groupId, '.t');
    const skey = this.keyFor(groupId, '.s');
    const encoded = pyJson([1, part.taskId, part.state, part.result]);
    const multi = this.#client.multi();
    if (this.#ordered) multi.zadd(jkey, groupIndex === null ? '+inf' : String(groupIndex), encoded).zcount(jkey, '-inf', '+inf');
    else multi.rpush(jkey, encoded).llen(jkey);
    multi.get(tkey).get(skey);
    const seconds = Math.ceil(expiresMs / 1000);
    if (seconds > 0) multi.expire(jkey, seconds).expire(tkey, seconds).expire(skey, seconds);
    const replies = (await multi.exec()) ?? [];
    for (const [error] of replies) if (error) throw error;
    const readyCount = Number(replies[1]?.[1] ?? 0);
    const extra = Number(replies[2]?.[1] ?? 0);
    const size = replies[3]?.[1];
    // No size yet: the sender has not finished sending the header (Celery sets it before the last header task).
    if (size === null || size === undefined || readyCount !== Number(size) + extra) return null;
    const stored = this.#ordered ? await this.#client.zrange(jkey, 0, -1) : await this.#client.lrange(jkey, 0, -1);
    const parts = stored.map((text) => decodePart(text, groupId));
    // Celery deletes the keys only after sending the body: a failed chord keeps them until they expire, and what its
    // other parts returned stays readable.
    if (!parts.some((part) => part.state === 'FAILURE' || part.state === 'REVOKED')) await this.#client.del(jkey, tkey, skey);
    return parts;
  }

  async saveGroup(groupId: string, result: ResultTuple, expiresMs: number): Promise<void> {
    const key = this.keyFor(groupId);
    const text = pyJson({ result });
    const seconds = Math.ceil(expiresMs / 1000);
    const multi = this.#client.multi();
    if (seconds > 0) multi.setex(key, seconds, text);
    else multi.set(key, text);
    // Celery publishes every key it sets on the result backend.
    await multi.publish(key, text).exec();
  }

  async restoreGroup(groupId: string): Promise<ResultTuple | null> {
    const text = await this.#client.get(this.keyFor(groupId));
    if (text === null) return null;
    const meta = parse(text, `the saved group ${groupId}`) as { result?: ResultTuple } | null;
    return meta?.result ?? null;
  }

  async deleteGroup(groupId: string): Promise<void> {
    await this.#client.del(this.keyFor(groupId));
  }
}

function decodePart(text: string, groupId: string): ChordPart {
  const value = parse(text, `a part of chord ${groupId}`);
  if (!Array.isArray(value) || value.length < 4 || typeof value[1] !== 'string' || typeof value[2] !== 'string') {
    throw new DecodeError(`A part of chord ${groupId} is not Celery's [1, id, state, result]: ${text.slice(0, 200)}`);
  }
  return { taskId: value[1], state: value[2] as TaskState, result: value[3] };
}

function parse(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    // Python writes NaN/Infinity literals that JSON.parse refuses; the lenient reader takes them.
    try {
      return documentValue(parseDocument(text));
    } catch {
      throw new DecodeError(`${what} is not JSON; kq reads chords written with result_serializer='json'.`, { cause: error });
    }
  }
}
