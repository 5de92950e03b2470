import { KqError, type CycleAdvance, type CycleBegin, type CycleMarker, type CycleRegister, type CycleState } from '@kq/core';
import type { RedisClient } from './connection-factory';
import { LuaScript } from './lua-script';
import type { RedisTransport } from './redis-transport';

/*
 * The register of kq periodic tasks on Redis (core's `CycleRegister` contract, `RedisTransport.cycleRegister`): one
 * hash per periodic task, `_kq.periodic.<name>` under the transport's `globalKeyprefix`, fields `cycle`, `step`, `token`, `until` (claim deadline, server ms), with a PX time to live
 * that every operation renews. Each operation is one script, so it is atomic for every process; claim deadlines use
 * the server's clock.
 */

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** KEYS: register. ARGV: cycle, step, ttl. 1 = created, 0 = one exists. */
const CREATE = new LuaScript(
  'periodic-create',
  `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'cycle', ARGV[1], 'step', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`,
);

/** KEYS: register. ARGV: cycle, step, token, claim ms, ttl. Returns the CycleBegin outcome. */
const BEGIN = new LuaScript(
  'periodic-begin',
  NOW +
    `
local fields = redis.call('HMGET', KEYS[1], 'cycle', 'step', 'token', 'until')
if not fields[1] then return 'absent' end
if fields[1] ~= ARGV[1] then return 'superseded' end
local step = tonumber(fields[2])
local wanted = tonumber(ARGV[2])
if step > wanted then return 'stale' end
if step == wanted and fields[3] and fields[3] ~= ARGV[3] and tonumber(fields[4] or '0') > now then return 'busy' end
redis.call('HSET', KEYS[1], 'step', ARGV[2], 'token', ARGV[3], 'until', now + tonumber(ARGV[4]))
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 'current'
`,
);

/** KEYS: register. ARGV: cycle, from step, to step, ttl. Returns the CycleAdvance outcome. */
const ADVANCE = new LuaScript(
  'periodic-advance',
  `
local fields = redis.call('HMGET', KEYS[1], 'cycle', 'step')
if not fields[1] then return 'absent' end
if fields[1] ~= ARGV[1] then return 'superseded' end
if tonumber(fields[2]) > tonumber(ARGV[2]) then return 'stale' end
redis.call('HSET', KEYS[1], 'step', ARGV[3])
redis.call('HDEL', KEYS[1], 'token', 'until')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 'advanced'
`,
);

/** KEYS: register. Returns {cycle, step, live claim token or false}. */
const READ = new LuaScript(
  'periodic-read',
  NOW +
    `
local fields = redis.call('HMGET', KEYS[1], 'cycle', 'step', 'token', 'until')
if not fields[1] then return false end
local claimed = false
if fields[3] and tonumber(fields[4] or '0') > now then claimed = fields[3] end
return {fields[1], fields[2], claimed}
`,
);

/** KEYS: register. ARGV: cycle or ''. 1 = deleted. */
const REMOVE = new LuaScript(
  'periodic-remove',
  `
local cycle = redis.call('HGET', KEYS[1], 'cycle')
if not cycle then return 0 end
if ARGV[1] ~= '' and cycle ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
`,
);

/** The register of kq periodic-task cycles on Redis (see the comment at the top of this file). */
export class RedisCycleRegister implements CycleRegister {
  readonly kind = 'redis';
  readonly #transport: RedisTransport;

  constructor(transport: RedisTransport) {
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
