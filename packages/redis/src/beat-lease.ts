import { randomUUID } from 'node:crypto';
import {
  ExchangeNotFound,
  KqError,
  routeMessage,
  encodeEnvelope,
  storedMessage,
  type BeatLease,
  type BeatLeaseListener,
  type BeatLeaseOptions,
  type CommitOutcome,
  type OutgoingMessage,
  type TickCommit,
  type TickPublication,
} from '@kq/core';
import { BeatOutbox, type BeatDelivery } from './beat-outbox';
import { isCluster, masterClientOf } from './cluster-routing';
import type { RedisClient } from './connection-factory';
import type { RedisLeaseHost } from './lease-host';
import { loadLuaScript } from './lua-script';

/*
 * kq beat's leader lease and schedule state on Redis (core's `BeatLease` contract, `RedisTransport.beatLease`). Keys, under the transport's `globalKeyprefix`:
 *
 *   _kq.beat.<group>.lease   string "<epoch>:<holder>"  SET NX PX — the lease; expires unless renewed
 *   _kq.beat.<group>.epoch   counter                     INCR on every new leadership — the fencing token
 *   _kq.beat.<group>.state   hash entry -> last tick ms  written only by COMMIT
 *
 * COMMIT checks the lease still holds the caller's "<epoch>:<holder>", checks the tick is later than the recorded
 * one, records it and LPUSHes the tick's task message into its queue lists — one script, so the state and the
 * message exist together or not at all. A paused or partitioned ex-leader's commit finds another token and is
 * refused: fencing by the server, with the server's clock.
 *
 * On Redis Cluster the keys share the hash tag `{kq.beat.<group>}` (`_kq.beat{…}.lease`, …), and a fourth, `.outbox`,
 * stands in for the atomic push (a script reaches one slot; the queues are elsewhere): COMMIT_RECORDED records the
 * tick with its messages in the outbox, the leader pushes them and clears the record, and a new leader first pushes
 * whatever records a dead one left (see BeatOutbox).
 */

/** KEYS: lease, epoch. ARGV: holder, ttl ms. Returns {epoch, 0} when the caller holds the lease, else {0, pttl}. */
const ACQUIRE = loadLuaScript('beat-acquire');

/** KEYS: lease. ARGV: token, ttl ms. 1 = renewed, 0 = not ours any more. */
const RENEW = loadLuaScript('beat-renew');

/** KEYS: lease. ARGV: token. Deletes the lease if it is the caller's. */
const RELEASE = loadLuaScript('beat-release');

/**
 * KEYS: lease, state, list keys to push to. ARGV: token, entry, tick, number of PUB/SUB channels, one envelope per
 * list key, then channel/envelope pairs. Returns 1 committed, 0 stale (tick not after the recorded one), -1 fenced.
 */
const COMMIT = loadLuaScript('beat-commit', 'beat-record-tick');

/**
 * The cluster's commit: KEYS: lease, state, outbox. ARGV: token, entry, tick, outbox field, messages ('' = none).
 * Returns as COMMIT does.
 */
const COMMIT_RECORDED = loadLuaScript('beat-commit-recorded', 'beat-record-tick');

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
export class RedisBeatLease implements BeatLease {
  readonly kind = 'redis';
  readonly #transport: RedisLeaseHost;
  readonly #options: BeatLeaseOptions;
  readonly #holder = randomUUID();
  readonly #keys: { lease: string; epoch: string; state: string };
  /** Redis Cluster only (see COMMIT_RECORDED). */
  readonly #outbox: BeatOutbox | undefined;
  /** Records this leader committed but could not send yet: sent again after each renewal. */
  readonly #unsent = new Map<string, string>();
  #listener: BeatLeaseListener | undefined;
  #held: Held | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #busy: Promise<void> | undefined;

  constructor(transport: RedisLeaseHost, options: BeatLeaseOptions) {
    if (!(options.leaseMs > 0) || !(options.renewIntervalMs > 0) || options.renewIntervalMs >= options.leaseMs) {
      throw new KqError(`A beat lease needs 0 < renewIntervalMs < leaseMs; got renewIntervalMs ${options.renewIntervalMs}, leaseMs ${options.leaseMs}.`);
    }
    this.#transport = transport;
    this.#options = options;
    const { prefix, cluster } = transport.layout;
    const base = cluster ? `${prefix}_kq.beat{kq.beat.${options.group}}` : `${prefix}_kq.beat.${options.group}`;
    this.#keys = { lease: `${base}.lease`, epoch: `${base}.epoch`, state: `${base}.state` };
    if (cluster) {
      this.#outbox = new BeatOutbox({
        key: `${base}.outbox`,
        commands: () => this.#redis(),
        publisherFor: (exchange) => this.#publisherFor(exchange),
      });
    }
  }

  /** The Redis keys this lease uses (for operators and tests); `outbox` on Redis Cluster only. */
  get keys(): Readonly<{ lease: string; epoch: string; state: string; outbox?: string }> {
    return this.#outbox ? { ...this.#keys, outbox: this.#outbox.key } : this.#keys;
  }

  async start(listener: BeatLeaseListener): Promise<void> {
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
        if (renewed === 1) {
          held.renewedAt = Date.now();
          await this.#sendUnsent(held);
        } else this.#depose(new KqError(`The beat lease (epoch ${held.epoch}) was taken over or expired.`));
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
    // What a leader before us committed but did not finish sending goes out before any tick of ours.
    if (this.#outbox) await this.#sendLeftBehind(this.#outbox);
    const held: Held = { token, epoch, controller: new AbortController(), renewedAt: acquiredAt };
    this.#held = held;
    this.#listener?.elected({
      epoch,
      lastTicks,
      signal: held.controller.signal,
      commit: (record) => this.#commit(held, record),
    });
  }

  async #sendLeftBehind(outbox: BeatOutbox): Promise<void> {
    for (const [field, payload] of await outbox.pending()) {
      try {
        await outbox.deliver(field, payload);
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error; // Redis trouble: the next attempt to lead tries again
        // Not a record this code wrote; it could never be sent, and must not stop every beat from leading.
        this.#listener?.error(new KqError(`Dropped the unreadable beat outbox record ${field} in ${outbox.key}: ${error.message}`));
        await this.#redis().hdel(outbox.key, field);
      }
    }
  }

  /**
   * Sends what this leader committed while its lease is surely still its own. Once deposed, the next leader sends it;
   * when a renewal is overdue, it waits for the next one.
   */
  async #send(held: Held, field: string, payload: string): Promise<void> {
    const outbox = this.#outbox as BeatOutbox;
    if (this.#held !== held) return;
    if (Date.now() - held.renewedAt >= this.#options.leaseMs) {
      this.#unsent.set(field, payload);
      return;
    }
    try {
      await outbox.deliver(field, payload);
      this.#unsent.delete(field);
    } catch (error) {
      this.#unsent.set(field, payload);
      this.#listener?.error(asError(error, `could not send the messages of beat tick ${field} yet (kept in ${outbox.key}; sent again after the next renewal)`));
    }
  }

  async #sendUnsent(held: Held): Promise<void> {
    for (const [field, payload] of [...this.#unsent]) await this.#send(held, field, payload);
  }

  #depose(reason: Error): void {
    const held = this.#held;
    if (!held) return;
    this.#held = undefined;
    this.#unsent.clear();
    held.controller.abort(reason);
    this.#listener?.deposed(reason);
  }

  async #commit(held: Held, record: TickCommit): Promise<CommitOutcome> {
    if (held.controller.signal.aborted || this.#held !== held) return 'fenced';
    const delivery = record.publish ? await this.#delivery(record.publish) : { pushes: [], broadcasts: [] };
    let result: number;
    let payload = '';
    const field = BeatOutbox.field(record.entry, record.tick);
    if (this.#outbox) {
      if (delivery.pushes.length > 0 || delivery.broadcasts.length > 0) payload = BeatOutbox.encode(delivery);
      const keys = [this.#keys.lease, this.#keys.state, this.#outbox.key];
      result = (await COMMIT_RECORDED.run(this.#redis(), keys, [held.token, record.entry, String(record.tick), field, payload])) as number;
    } else {
      const keys = [this.#keys.lease, this.#keys.state, ...delivery.pushes.map(([list]) => list)];
      const broadcasts = delivery.broadcasts.flatMap(([channel, envelope]) => [channel, envelope]);
      const envelopes = delivery.pushes.map(([, envelope]) => envelope);
      result = (await COMMIT.run(this.#redis(), keys, [held.token, record.entry, String(record.tick), delivery.broadcasts.length, ...envelopes, ...broadcasts])) as number;
    }
    if (result === -1) {
      this.#depose(new KqError(`A commit of beat epoch ${held.epoch} was fenced off: another process holds the lease now.`));
      return 'fenced';
    }
    if (result === 1 && payload !== '') await this.#send(held, field, payload);
    return result === 1 ? 'committed' : 'stale';
  }

  /** The tick's message as what to push to each queue's list and what to broadcast. */
  async #delivery(publish: TickPublication): Promise<BeatDelivery> {
    const { exchange, routingKey, message } = publish;
    const { queues, channel } = await this.#route(exchange, routingKey, message);
    const step = this.#transport.priorityStep(message.properties.priority);
    return {
      pushes: queues.map((queue) => [this.#transport.layout.listKey(queue, step), encodeEnvelope(storedMessage(exchange, routingKey, message))] as const),
      broadcasts: channel === undefined ? [] : [[channel, encodeEnvelope(storedMessage(exchange, routingKey, message)), exchange] as const],
    };
  }

  /** As the transport's fanout publishes: on a cluster, through the master serving the exchange's channel slot. */
  #publisherFor(exchange: string): RedisClient {
    const commands = this.#redis();
    if (!isCluster(commands)) return commands;
    return masterClientOf(commands, this.#transport.layout.publishChannel(exchange, '')) ?? commands;
  }

  /** Where a publish goes, decided as the channel decides it (Kombu's routing, docs/wire.md#exchanges-and-bindings). */
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

function asError(error: unknown, context: string): Error {
  return new KqError(`${context}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}
