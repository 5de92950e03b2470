import { KqError, type CycleAdvance, type CycleBegin, type CycleMarker, type CycleRegister, type CycleState } from '@kq/core';
import type { RedisClient } from './connection-factory';
import type { RedisLeaseHost } from './lease-host';
import { loadLuaScript } from './lua-script';

/*
 * The register of kq periodic tasks on Redis (core's `CycleRegister` contract, `RedisTransport.cycleRegister`): one
 * hash per periodic task, `_kq.periodic.<name>` under the transport's `globalKeyprefix`, fields `cycle`, `step`, `token`, `until` (claim deadline, server ms), with a PX time to live
 * that every operation renews. Each operation is one script, so it is atomic for every process; claim deadlines use
 * the server's clock.
 */

/** KEYS: register. ARGV: cycle, step, ttl. 1 = created, 0 = one exists. */
const CREATE = loadLuaScript('periodic-create');

/** KEYS: register. ARGV: cycle, step, token, claim ms, ttl. Returns the CycleBegin outcome. */
const BEGIN = loadLuaScript('periodic-begin', 'server-now');

/** KEYS: register. ARGV: cycle, from step, to step, ttl. Returns the CycleAdvance outcome. */
const ADVANCE = loadLuaScript('periodic-advance');

/** KEYS: register. Returns {cycle, step, live claim token or false}. */
const READ = loadLuaScript('periodic-read', 'server-now');

/** KEYS: register. ARGV: cycle or ''. 1 = deleted. */
const REMOVE = loadLuaScript('periodic-remove');

/** The register of kq periodic-task cycles on Redis (see the comment at the top of this file). */
export class RedisCycleRegister implements CycleRegister {
  readonly kind = 'redis';
  readonly #transport: RedisLeaseHost;

  constructor(transport: RedisLeaseHost) {
    this.#transport = transport;
  }

  /** The Redis key of the register `key`. */
  redisKey(key: string): string {
    return `${this.#transport.layout.prefix}_kq.periodic.${key}`;
  }

  async create(key: string, marker: CycleMarker, ttlMs: number): Promise<boolean> {
    return (await CREATE.run(await this.#redis(), [this.redisKey(key)], [marker.cycle, marker.step, ttl(ttlMs)])) === 1;
  }

  async begin(key: string, marker: CycleMarker, token: string, claimMs: number, ttlMs: number): Promise<CycleBegin> {
    return (await BEGIN.run(await this.#redis(), [this.redisKey(key)], [marker.cycle, marker.step, token, ttl(claimMs), ttl(ttlMs)])) as CycleBegin;
  }

  async advance(key: string, from: CycleMarker, toStep: number, ttlMs: number): Promise<CycleAdvance> {
    return (await ADVANCE.run(await this.#redis(), [this.redisKey(key)], [from.cycle, from.step, toStep, ttl(ttlMs)])) as CycleAdvance;
  }

  async read(key: string): Promise<CycleState | null> {
    const result = (await READ.run(await this.#redis(), [this.redisKey(key)], [])) as [string, string, string | null] | null;
    if (!result) return null;
    const [cycle, step, claimed] = result;
    return { cycle, step: Number(step), claimedBy: claimed || null };
  }

  async remove(key: string, cycle?: string): Promise<boolean> {
    return (await REMOVE.run(await this.#redis(), [this.redisKey(key)], [cycle ?? ''])) === 1;
  }

  async close(): Promise<void> {}

  async #redis(): Promise<RedisClient> {
    await this.#transport.connect();
    return this.#transport.redisStore.commands;
  }
}

function ttl(ms: number): number {
  if (!(ms > 0) || !Number.isFinite(ms)) throw new KqError(`A periodic register time must be a positive number of ms; got ${ms}.`);
  return Math.ceil(ms);
}
