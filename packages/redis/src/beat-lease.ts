import { randomUUID } from 'node:crypto';
import { ExchangeNotFound, KqError, routeMessage, type OutgoingMessage, type StoredMessage } from '@kq/core';
import type { RedisClient } from './connection-factory';
import { encodeEnvelope } from '@kq/core';
import { LuaScript } from './lua-script';
import type { RedisTransport } from './redis-transport';

/*
 * kq beat's leader lease and schedule state on Redis (the worker's `BeatLease` contract, matched structurally so
 * this package does not depend on @kq/worker). Keys, under the transport's `globalKeyprefix`:
 *
 *   _kq.beat.<group>.lease   string "<epoch>:<holder>"  SET NX PX — the lease; expires unless renewed
 *   _kq.beat.<group>.epoch   counter                     INCR on every new leadership — the fencing token
 *   _kq.beat.<group>.state   hash entry -> last tick ms  written only by COMMIT
 *
 * COMMIT checks the lease still holds the caller's "<epoch>:<holder>", checks the tick is later than the recorded
 * one, records it and LPUSHes the tick's task message into its queue lists — one script, so the state and the
 * message exist together or not at all. A paused or partitioned ex-leader's commit finds another token and is
 * refused: fencing by the server, with the server's clock.
 */

/** KEYS: lease, epoch. ARGV: holder, ttl ms. Returns {epoch, 0} when the caller holds the lease, else {0, pttl}. */
const ACQUIRE = new LuaScript(
  'beat-acquire',
  `
local current = redis.call('GET', KEYS[1])
if current then
  local colon = string.find(current, ':', 1, true)
  if colon and string.sub(current, colon + 1) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {tonumber(string.sub(current, 1, colon - 1)), 0}
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], epoch .. ':' .. ARGV[1], 'PX', ARGV[2])
return {epoch, 0}
`,
);

/** KEYS: lease. ARGV: token, ttl ms. 1 = renewed, 0 = not ours any more. */
const RENEW = new LuaScript(
  'beat-renew',
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`,
);

/** KEYS: lease. ARGV: token. Deletes the lease if it is the caller's. */
const RELEASE = new LuaScript(
  'beat-release',
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`,
);

/**
 * KEYS: lease, state, list keys to push to. ARGV: token, entry, tick, number of PUB/SUB channels, one envelope per
 * list key, then channel/envelope pairs. Returns 1 committed, 0 stale (tick not after the recorded one), -1 fenced.
 */
const COMMIT = new LuaScript(
  'beat-commit',
  `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local recorded = redis.call('HGET', KEYS[2], ARGV[2])
if recorded and tonumber(recorded) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
local lists = #KEYS - 2
for i = 1, lists do redis.call('LPUSH', KEYS[i + 2], ARGV[i + 4]) end
local channels = tonumber(ARGV[4])
for i = 1, channels do
  local at = 4 + lists + (i - 1) * 2
  redis.call('PUBLISH', ARGV[at + 1], ARGV[at + 2])
end
return 1
`,
);

export interface RedisBeatLeaseOptions {
  /** Schedule group: processes of one group elect one leader and share one state. */
  group: string;
  /** Lease time to live, ms: how long a crashed leader blocks a takeover. */
  leaseMs: number;
  /** How often the leader renews and followers try to acquire, ms. */
  renewIntervalMs: number;
}

/** A message to publish with a tick (what `Channel.publish` takes). */
export interface RedisTickPublication {
  exchange: string;
  routingKey: string;
  message: OutgoingMessage;
}

export interface RedisTickCommit {
  entry: string;
  tick: number;
  publish?: RedisTickPublication;
}

export type RedisCommitOutcome = 'committed' | 'stale' | 'fenced';

export interface RedisBeatLeadership {
  readonly epoch: number;
  readonly lastTicks: ReadonlyMap<string, number>;
  readonly signal: AbortSignal;
  commit(record: RedisTickCommit): Promise<RedisCommitOutcome>;
}

export interface RedisBeatLeaseListener {
  elected(leadership: RedisBeatLeadership): void;
  deposed(reason: Error): void;
  error(error: Error): void;
}

interface Held {
  readonly token: string;
  readonly epoch: number;
  readonly controller: AbortController;
  /** Local time of the last confirmed renewal: past `leaseMs` of it, the lease may be someone else's. */
  renewedAt: number;
}

/**
 * Leader election with fencing for kq beat on Redis: a `SET NX PX` lease carrying a monotonically increasing epoch,
 * renewed by the leader, and a commit script that only the current lease holder can run. Uses the transport's
 * command connection (the same Redis that holds the queues, which is what makes the commit atomic).
 */
export class RedisBeatLease {
  readonly kind = 'redis';
  readonly #transport: RedisTransport;
  readonly #options: RedisBeatLeaseOptions;
  readonly #holder = randomUUID();
  readonly #keys: { lease: string; epoch: string; state: string };
  #listener: RedisBeatLeaseListener | undefined;
  #held: Held | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #busy: Promise<void> | undefined;

  constructor(transport: RedisTransport, options: RedisBeatLeaseOptions) {
    if (!(options.leaseMs > 0) || !(options.renewIntervalMs > 0) || options.renewIntervalMs >= options.leaseMs) {
      throw new KqError(`A beat lease needs 0 < renewIntervalMs < leaseMs; got renewIntervalMs ${options.renewIntervalMs}, leaseMs ${options.leaseMs}.`);
    }
    if (transport.layout.cluster) {
      // COMMIT records the tick and pushes its task in one script, which on a cluster would span the state's slot and
      // the queue's: refused rather than run without the fencing that makes one leader's tick happen once.
      throw new KqError(
        'kq beat cannot keep its leader lease on Redis Cluster (the tick and its task message must be written in one script, ' +
          'and a cluster script reaches one slot): give beat a plain redis:// or sentinel:// broker.',
      );
    }
    this.#transport = transport;
    this.#options = options;
    const base = `${transport.layout.prefix}_kq.beat.${options.group}`;
    this.#keys = { lease: `${base}.lease`, epoch: `${base}.epoch`, state: `${base}.state` };
  }

  /** The Redis keys this lease uses (for operators and tests). */
  get keys(): Readonly<{ lease: string; epoch: string; state: string }> {
    return this.#keys;
  }

  async start(listener: RedisBeatLeaseListener): Promise<void> {
    this.#listener = listener;
    this.#running = true;
    await this.#transport.connect();
    await this.#step();
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    await this.#busy?.catch(() => undefined);
    const held = this.#held;
    if (!held) return;
    this.#depose(new KqError('This beat stopped and released its lease.'));
    try {
      await RELEASE.run(this.#redis(), [this.#keys.lease], [held.token]);
    } catch (error) {
      this.#listener?.error(asError(error, 'could not release the beat lease (it will expire)'));
    }
  }

  #schedule(): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => {
      this.#busy = this.#step().finally(() => {
        this.#busy = undefined;
        this.#schedule();
      });
    }, this.#options.renewIntervalMs);
    this.#timer.unref();
  }

  /** One beat of the lease: the leader renews, a follower tries to acquire. Never throws. */
  async #step(): Promise<void> {
    if (!this.#running) return;
    const held = this.#held;
    try {
      if (held) {
        const renewed = (await RENEW.run(this.#redis(), [this.#keys.lease], [held.token, this.#options.leaseMs])) as number;
        if (renewed === 1) held.renewedAt = Date.now();
        else this.#depose(new KqError(`The beat lease (epoch ${held.epoch}) was taken over or expired.`));
        return;
      }
      const [epoch] = (await ACQUIRE.run(this.#redis(), [this.#keys.lease, this.#keys.epoch], [this.#holder, this.#options.leaseMs])) as [number, number];
      if (epoch > 0 && this.#running) await this.#elect(epoch, Date.now());
    } catch (error) {
      this.#listener?.error(asError(error, held ? 'could not renew the beat lease' : 'could not try to acquire the beat lease'));
      // Unable to renew for a whole lease period: someone else may hold it now, so stop acting as leader.
      if (held && this.#held === held && Date.now() - held.renewedAt >= this.#options.leaseMs - this.#options.renewIntervalMs) {
        this.#depose(new KqError('Could not renew the beat lease in time (Redis unreachable).'));
      }
    }
  }

  async #elect(epoch: number, acquiredAt: number): Promise<void> {
    const token = `${epoch}:${this.#holder}`;
    // Read after acquiring: no earlier leader can commit any more, so this state is final for them.
    const raw = await this.#redis().hgetall(this.#keys.state);
    const lastTicks = new Map<string, number>();
    for (const [entry, value] of Object.entries(raw)) {
      const tick = Number(value);
      if (Number.isFinite(tick)) lastTicks.set(entry, tick);
    }
    const held: Held = { token, epoch, controller: new AbortController(), renewedAt: acquiredAt };
    this.#held = held;
    this.#listener?.elected({
      epoch,
      lastTicks,
      signal: held.controller.signal,
      commit: (record) => this.#commit(held, record),
    });
  }

  #depose(reason: Error): void {
    const held = this.#held;
    if (!held) return;
    this.#held = undefined;
    held.controller.abort(reason);
    this.#listener?.deposed(reason);
  }

  async #commit(held: Held, record: RedisTickCommit): Promise<RedisCommitOutcome> {
    if (held.controller.signal.aborted || this.#held !== held) return 'fenced';
    const keys = [this.#keys.lease, this.#keys.state];
    const envelopes: string[] = [];
    const broadcasts: string[] = [];
    if (record.publish) {
      const { exchange, routingKey, message } = record.publish;
      const { queues, channel } = await this.#route(exchange, routingKey, message);
      const step = this.#transport.priorityStep(message.properties.priority);
      for (const queue of queues) {
        keys.push(this.#transport.layout.listKey(queue, step));
        envelopes.push(encodeEnvelope(stored(exchange, routingKey, message)));
      }
      if (channel !== undefined) broadcasts.push(channel, encodeEnvelope(stored(exchange, routingKey, message)));
    }
    const result = (await COMMIT.run(this.#redis(), keys, [
      held.token,
      record.entry,
      String(record.tick),
      broadcasts.length / 2,
      ...envelopes,
      ...broadcasts,
    ])) as number;
    if (result === -1) {
      this.#depose(new KqError(`A commit of beat epoch ${held.epoch} was fenced off: another process holds the lease now.`));
      return 'fenced';
    }
    return result === 1 ? 'committed' : 'stale';
  }

  /** Where a publish goes, decided as the transport's channel decides it (Kombu's routing, WIRE §2.4). */
  async #route(exchange: string, routingKey: string, message: OutgoingMessage): Promise<{ queues: string[]; channel?: string }> {
    if (exchange === '') return { queues: [routingKey] };
    const declared = await this.#transport.findExchange(exchange);
    if (!declared) throw new ExchangeNotFound(exchange);
    if (declared.type === 'fanout') return { queues: [], channel: this.#transport.layout.publishChannel(exchange, routingKey) };
    const bindings = await this.#transport.redisStore.listBindings(exchange);
    return { queues: routeMessage(declared.type, bindings, routingKey, message.headers) };
  }

  #redis(): RedisClient {
    return this.#transport.redisStore.commands;
  }
}

/** The beat lease of a Redis transport (what @kq/worker's Beat loads for `redis://` brokers). */
export function createBeatLease(transport: RedisTransport, options: RedisBeatLeaseOptions): RedisBeatLease {
  return new RedisBeatLease(transport, options);
}

function stored(exchange: string, routingKey: string, message: OutgoingMessage): StoredMessage {
  // Each copy gets its own Kombu delivery tag, as the channel gives each queue its own copy.
  return {
    body: message.body,
    contentType: message.contentType,
    contentEncoding: message.contentEncoding,
    headers: { ...message.headers },
    properties: { ...message.properties },
    exchange,
    routingKey,
    deliveryTag: randomUUID(),
    redelivered: false,
  };
}

function asError(error: unknown, context: string): Error {
  return new KqError(`${context}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}
