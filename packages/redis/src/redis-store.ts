import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ConnectionLost,
  KqError,
  Queue,
  StaleDeliveryError,
  type BindingRecord,
  type Claim,
  type ClaimOptions,
  type Exchange,
  type RestoreOptions,
  type StoredMessage,
  type VirtualStore,
  type VirtualStoreFeatures,
} from '@kq/core';
import type { Cluster, Redis } from 'ioredis';
import { AckBatcher, type PendingAck } from './ack-batcher';
import { PushBatcher } from './push-batcher';
import { BlockingPool, type BlockingWaiter } from './blocking-pool';
import { ClusterBlockingPool } from './cluster-blocking-pool';
import { knownNodes } from './cluster-routing';
import { ClusterQueues } from './cluster-queues';
import { describeError, isConnectionError, rethrowRecoverable } from './connection-errors';
import { tlsFailureFor } from './tls-guard';
import { DEFAULT_DEAD_LETTER_MAX, DeadLetterList } from './dead-letter-list';
import type { ConnectionFactory, RedisClient } from './connection-factory';
import { DelayedPromoter } from './delayed-promoter';
import { MalformedEnvelope, backoffCountdown, decodeEnvelope, encodeEnvelope, markRedelivered } from '@kq/core';
import { RedisBindings } from './redis-bindings';
import type { KeyLayout } from './key-layout';
import { LeaseKeeper } from './lease-keeper';
import { ACK, CLAIM, DRAIN_LISTS, QUARANTINE, RENEW, RESTORE } from './lua-scripts';
import { quarantineRecord } from './quarantine';
import { RedisFanoutBus } from './redis-fanout-bus';
import { Sweeper } from './sweeper';

/** A claim of the Redis store: what a settle needs to find (and fence) the delivery. */
export interface RedisClaim extends Claim {
  /** Priority step of the list it came from. */
  readonly step: number;
  /** The envelope exactly as it was stored. */
  readonly raw: string;
  /** Identifies this claim (not the message) in kq's holder records; '' for noAck claims. */
  readonly token: string;
  /** The delivery tag the claim was recorded under in `unacked` (the envelope's `properties.delivery_tag`). */
  readonly tag: string;
  /**
   * Set while the record of a claim handed out early (see `#takePoppedEarly`) is on its way: resolves true once it
   * is in Redis, false when it could not be made (the message went back to its list). Settles wait for it.
   */
  recording?: Promise<boolean> | undefined;
}

/** A message BRPOP popped, which only this process holds until a claim script records it. */
interface PoppedMessage {
  queue: string;
  step: number;
  /** The list it was popped from. */
  key: string;
  raw: string;
  /** The token to record it under when it was already handed out; otherwise the script makes one. */
  token?: string;
}

/** What a claim script call took: the claims it sends back, and the tag a handed-out popped message got. */
interface ClaimReply {
  claims: RedisClaim[];
  /** The delivery tag the popped message was recorded under; undefined when it was not (quarantined). */
  poppedTag: string | undefined;
}

export interface RedisStoreSettings {
  factory: ConnectionFactory;
  layout: KeyLayout;
  storeId: string;
  leaseMs: number;
  leaseRenewIntervalMs: number;
  promoteDelayed: boolean;
  autoPipelining: boolean;
  /** Lease sweep period (see Sweeper). */
  leaseSweepIntervalMs: number;
  visibilitySweepIntervalMs: number;
  /** Kombu `visibility_timeout`, seconds. */
  visibilityTimeout: number;
  /** Most rejected messages kept in `_kq.dead` (default 10 000). */
  deadLetterMax?: number;
  /** Kombu `unacked_mutex_expire`, seconds. */
  unackedMutexExpire: number;
  unackedRestoreLimit: number;
  warn: (message: string) => void;
  onError: (error: unknown) => void;
  onConnectionState: (state: 'ready' | 'lost') => void;
}

export interface RedisStoreStats {
  /** Deliveries this process holds (leases it renews). */
  held: number;
  /** Held deliveries a sweep took back because their lease ran out before a heartbeat. */
  leasesLost: number;
  /** Messages moved to the quarantine list by this process. */
  quarantined: number;
  /** Delayed messages this process's promoter moved to their queues. */
  promoted: number;
  /** Open BRPOP connections (one per concurrently waiting consumer). */
  blockingConnections: number;
  /** Fanout patterns this process is subscribed to. */
  fanoutSubscriptions: number;
  /** Deliveries this process's sweeps restored because a kq lease ran out. */
  leaseRestored: number;
  /** Deliveries this process's sweeps restored by Kombu's visibility-timeout rule. */
  visibilityRestored: number;
}

/** Attempts to record a message BRPOP already popped before giving up and pushing it back. */
const RECORD_ATTEMPTS = 5;

/**
 * Kombu's Redis layout (or kq's Redis Cluster layout, see KeyLayout) as a `VirtualStore`: lists per queue and priority step,
 * `_kombu.binding.*` sets, the `unacked` hash and index, PUB/SUB fanout — plus kq's leases, fencing, delayed set and
 * quarantine list. Three kinds of connection: commands (auto-pipelined), one subscriber, and one BRPOP connection per
 * waiting consumer.
 */
export class RedisStore implements VirtualStore {
  readonly features: VirtualStoreFeatures = {
    priorities: true,
    delayedDelivery: true,
    crashRecovery: true,
    fanout: 'live',
    pipelinedClaims: true,
  };
  readonly layout: KeyLayout;
  readonly #settings: RedisStoreSettings;
  readonly #leases: LeaseKeeper;
  readonly #acks: AckBatcher<RedisClaim>;
  /** Rejected task messages with no dead-letter exchange to go to (`_kq.dead`). */
  readonly deadLetters: DeadLetterList;
  readonly #pushes: PushBatcher;
  /** Exchanges and bindings, in Kombu's binding sets. */
  readonly bindings: RedisBindings;
  /** Queue sets whose last claim found them empty: the next claim starts with BRPOP instead of a script call. */
  readonly #idleSets = new Map<string, boolean>();
  #commands: RedisClient | undefined;
  #subscriber: Redis | undefined;
  #pool: BlockingWaiter | undefined;
  /** Cluster layout: the queues whose scoped records exist, for sweeps and promotion (undefined otherwise). */
  #clusterQueues: ClusterQueues | undefined;
  #bus: RedisFanoutBus | undefined;
  #promoter: DelayedPromoter | undefined;
  #sweeper: Sweeper | undefined;
  /** Counts of sweepers of earlier connections (a store can be reopened). */
  readonly #sweepCounts = { leaseRestored: 0, visibilityRestored: 0 };
  #claimSeq = 0;
  #requestSeq = 0;
  #quarantined = 0;
  #everReady = false;
  #closed = false;

  constructor(settings: RedisStoreSettings) {
    this.#settings = settings;
    this.layout = settings.layout;
    this.#acks = new AckBatcher<RedisClaim>((acks) => this.#sendAcks(acks), {
      staleError: (claim) => this.#stale('ack', claim),
      // The lease is kept (and renewed) until the ack has landed: released earlier, an ack held through an outage
      // would let the lease run out and the finished task run again.
      done: (claim) => this.#leases.release(claim.token),
      retryable: (error) => !this.#closed && isConnectionError(error),
      holding: (count, error) =>
        this.#settings.warn(`kq/redis: holding ${count} ack(s) until Redis answers again (${describeError(error)}); nothing is dropped`),
    });
    this.bindings = new RedisBindings(() => this.commands, settings.layout);
    if (settings.layout.cluster) this.#clusterQueues = new ClusterQueues(() => this.commands, settings.layout);
    this.deadLetters = new DeadLetterList(() => this.commands, settings.layout, settings.deadLetterMax ?? DEFAULT_DEAD_LETTER_MAX, settings.warn);
    this.#pushes = new PushBatcher((key, values) => this.commands.lpush(key, ...values).catch(rethrowRecoverable));
    this.#leases = new LeaseKeeper({
      intervalMs: settings.leaseRenewIntervalMs,
      renew: (pairs) => this.#renew(pairs),
      onError: (error) => this.#reportError(error),
    });
  }

  /** True once closed or terminated (until opened again): background failures are no longer reported. */
  get closed(): boolean {
    return this.#closed;
  }

  get fanoutBus(): RedisFanoutBus | undefined {
    return this.#bus;
  }

  /** The command connection (open stores only); in cluster mode ioredis's `Cluster`. */
  get commands(): RedisClient {
    if (!this.#commands) throw new ConnectionLost('The Redis store is not open; call transport.connect() first.');
    return this.#commands;
  }

  async open(): Promise<void> {
    this.#closed = false;
    const { factory, layout } = this.#settings;
    const commands = factory.createClient('cmd', { enableAutoPipelining: this.#settings.autoPipelining });
    const subscriber = factory.createSubscriber('sub', {}, () => knownNodes(commands));
    this.#watchConnection(commands);
    try {
      await commands.connect();
      // On a cluster the commands reached it, so a subscriber's node that does not answer is passed over by its
      // reconnects (see createSubscriber) rather than failing the store.
      if (factory.cluster) void subscriber.connect().catch(() => undefined);
      else await subscriber.connect();
    } catch (error) {
      commands.disconnect();
      subscriber.disconnect();
      // ioredis rejects with "Connection is closed"; the TLS failure that closed it is the cause worth naming.
      const tlsFailure = tlsFailureFor(commands) ?? tlsFailureFor(subscriber);
      if (tlsFailure) throw tlsFailure;
      throw new ConnectionLost(`Cannot connect to Redis: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    // ioredis selects the database on its own and, when the server refuses the number, carries on in database 0:
    // every message would silently go there. Asked here, a refusal is an error that says what to change.
    if (factory.db !== 0) {
      try {
        await commands.select(factory.db);
      } catch (error) {
        commands.disconnect();
        subscriber.disconnect();
        throw new KqError(
          `Redis database ${factory.db} cannot be selected (${error instanceof Error ? error.message : String(error)}): use a ` +
            `number below the server's "databases" setting (16 by default), e.g. redis://127.0.0.1:6379/0.`,
          { cause: error },
        );
      }
    }
    this.#commands = commands;
    this.#subscriber = subscriber;
    this.#pool = factory.cluster ? new ClusterBlockingPool(factory, commands as Cluster) : new BlockingPool(factory, commands as Redis);
    const scopes = (): Promise<readonly string[]> => this.queueScopes();
    this.#bus = new RedisFanoutBus(layout, commands, subscriber, this.#settings.warn);
    this.#sweeper = new Sweeper({
      commands,
      layout,
      scopes,
      leaseSweepIntervalMs: this.#settings.leaseSweepIntervalMs,
      visibilitySweepIntervalMs: this.#settings.visibilitySweepIntervalMs,
      visibilityTimeout: this.#settings.visibilityTimeout,
      mutexExpire: this.#settings.unackedMutexExpire,
      restoreLimit: this.#settings.unackedRestoreLimit,
      route: (exchange, routingKey, headers) => this.routeForRestore(exchange, routingKey, headers),
      warn: this.#settings.warn,
      onError: (error) => this.#reportError(error),
    });
    if (this.#settings.promoteDelayed) {
      this.#promoter = new DelayedPromoter({ commands, subscriber, layout, scopes, onError: (error) => this.#reportError(error) });
      await this.#promoter.start();
    }
  }

  async close(): Promise<void> {
    // Pushes and acks handed to us before close still go out.
    if (this.#commands) await Promise.all([this.#pushes.flush(), this.#acks.flush()]);
    this.#closed = true;
    this.#stopBackground();
    await this.#pool?.close();
    await Promise.all([quit(this.#subscriber), quit(this.#commands)]);
    this.#forgetConnections();
  }

  /** Drops every connection at once, restoring nothing and renewing nothing: what a crashed process leaves behind. */
  terminate(): void {
    this.#closed = true;
    this.#acks.failAll(new ConnectionLost('The Redis store was terminated before this ack was sent.'));
    this.#pushes.failAll(new ConnectionLost('The Redis store was terminated before this message was sent.'));
    this.#stopBackground();
    this.#pool?.terminate();
    this.#subscriber?.disconnect();
    this.#commands?.disconnect();
    this.#forgetConnections();
  }

  stats(): RedisStoreStats {
    return {
      held: this.#leases.held,
      leasesLost: this.#leases.lost,
      quarantined: this.#quarantined,
      promoted: this.#promoter?.promoted ?? 0,
      blockingConnections: this.#pool?.size ?? 0,
      fanoutSubscriptions: this.#bus?.patterns ?? 0,
      leaseRestored: this.#sweepCounts.leaseRestored + (this.#sweeper?.counts.leaseRestored ?? 0),
      visibilityRestored: this.#sweepCounts.visibilityRestored + (this.#sweeper?.counts.visibilityRestored ?? 0),
    };
  }

  /** Sends a heartbeat for every held delivery now (the timer does it every `leaseRenewIntervalMs`). */
  renewLeases(): Promise<void> {
    return this.#leases.renewNow();
  }

  /** Restores deliveries whose kq lease ran out, now (consuming processes also do it every `sweepIntervalMs`). */
  sweepLeases(): Promise<number> {
    return this.#requireSweeper().sweepLeases();
  }

  /** Runs Kombu's visibility-timeout sweep now. */
  sweepVisibility(): Promise<number> {
    return this.#requireSweeper().sweepVisibility();
  }

  // ——— exchanges and bindings (kept where Kombu keeps them; see RedisBindings) ———

  declareExchange(exchange: Exchange): Promise<void> {
    return this.bindings.declareExchange(exchange);
  }

  lookupExchange(name: string): Promise<Exchange | undefined> {
    return this.bindings.lookupExchange(name);
  }

  /** An exchange known only from its Kombu binding set (declared by a Python process), with a guessed type. */
  inferExchange(name: string): Promise<Exchange | undefined> {
    return this.bindings.inferExchange(name);
  }

  deleteExchange(name: string): Promise<void> {
    return this.bindings.deleteExchange(name);
  }

  addBinding(exchange: string, binding: BindingRecord): Promise<void> {
    return this.bindings.addBinding(exchange, binding);
  }

  removeBinding(exchange: string, binding: BindingRecord): Promise<void> {
    return this.bindings.removeBinding(exchange, binding);
  }

  /** The fanout bindings of a queue that kq processes declared (exchange, binding key). */
  fanoutBindingsOf(queue: string): Promise<Array<{ exchange: string; routingKey: string }>> {
    return this.bindings.fanoutBindingsOf(queue);
  }

  listBindings(exchange: string): Promise<readonly BindingRecord[]> {
    return this.bindings.listBindings(exchange);
  }

  /** The queues a delivery published to (exchange, routing key) goes back to, as Kombu's `_lookup` finds them. */
  routeForRestore(exchange: string, routingKey: string, headers: Record<string, unknown>): Promise<string[]> {
    return this.bindings.routeForRestore(exchange, routingKey, headers);
  }

  // ——— queues ———

  async declareQueue(queue: Queue): Promise<void> {
    await this.commands.hset(this.layout.key('queues'), queue.name, JSON.stringify(queueOptions(queue)));
  }

  async lookupQueue(name: string): Promise<Queue | undefined> {
    const stored = await this.commands.hget(this.layout.key('queues'), name);
    if (stored === null) return undefined;
    try {
      return new Queue(name, JSON.parse(stored) as ReturnType<typeof queueOptions>);
    } catch {
      return undefined;
    }
  }

  async queueExists(name: string): Promise<boolean> {
    if (this.layout.cluster) {
      // Two slots (the queue's, kq's shared one): a pipeline may not span them.
      const [lists, declared] = await Promise.all([this.commands.exists(...this.layout.queueKeys(name)), this.commands.hexists(this.layout.key('queues'), name)]);
      return lists > 0 || declared > 0;
    }
    const pipeline = this.commands.pipeline();
    pipeline.exists(...this.layout.queueKeys(name));
    pipeline.hexists(this.layout.key('queues'), name);
    const results = (await pipeline.exec()) ?? [];
    return results.some(([error, value]) => !error && Number(value) > 0);
  }

  async deleteQueue(name: string): Promise<number> {
    const count = Number(await DRAIN_LISTS.run(this.commands, this.layout.queueKeys(name), []));
    await this.bindings.removeBindingsOf(name);
    await this.commands
      .multi()
      .hdel(this.layout.key('queues'), name)
      .del(this.layout.fanoutBindingsKey(name), this.layout.boundExchangesKey(name))
      .exec();
    await this.#clusterQueues?.forget(name);
    return count;
  }

  async purgeQueue(name: string): Promise<number> {
    return Number(await DRAIN_LISTS.run(this.commands, this.layout.queueKeys(name), []));
  }

  /** Kombu's list per priority step, each with its length (one pipelined LLEN each). */
  async queueSizesByStep(name: string): Promise<ReadonlyArray<{ step: number; messageCount: number }>> {
    const pipeline = this.commands.pipeline();
    for (const key of this.layout.queueKeys(name)) pipeline.llen(key);
    const results = (await pipeline.exec()) ?? [];
    return this.layout.steps.map((step, index) => {
      const [error, value] = results[index] ?? [null, 0];
      if (error) throw error;
      return { step, messageCount: Number(value) };
    });
  }

  async queueSize(name: string): Promise<number> {
    const pipeline = this.commands.pipeline();
    for (const key of this.layout.queueKeys(name)) pipeline.llen(key);
    const results = (await pipeline.exec()) ?? [];
    let total = 0;
    for (const [error, value] of results) {
      if (error) throw error;
      total += Number(value);
    }
    return total;
  }

  // ——— messages ———

  push(queue: string, message: StoredMessage, priority: number): Promise<void> {
    // Encoded now (a throw is this call's), sent at the end of the turn with the turn's other pushes to that list.
    let envelope: string;
    try {
      envelope = encodeEnvelope(message);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#pushes.push(this.layout.listKey(queue, priority), envelope);
  }

  pushMany(queue: string, messages: readonly StoredMessage[], priority: number): Promise<void> {
    let envelopes: string[];
    try {
      envelopes = messages.map(encodeEnvelope);
    } catch (error) {
      return Promise.reject(error);
    }
    // Through the batcher, so the batch keeps its place after pushes made before it in this turn.
    return this.#pushes.pushAll(this.layout.listKey(queue, priority), envelopes);
  }

  async pushDelayed(queue: string, message: StoredMessage, priority: number, dueAt: number): Promise<void> {
    // The due time travels as a delay so the server clock decides (processes' clocks may disagree).
    const envelope = encodeEnvelope(message);
    await this.#clusterQueues?.note([queue]);
    await DelayedPromoter.push(this.commands, this.layout, queue, this.layout.listName(queue, priority), envelope, dueAt - Date.now());
  }

  /** The scopes of the per-queue structures: every known queue in the cluster layout, `['']` in Kombu's. */
  queueScopes(): Promise<readonly string[]> {
    return this.#clusterQueues?.list() ?? Promise.resolve(DEFAULT_SCOPES);
  }

  async claim(queues: readonly string[], options: ClaimOptions): Promise<Claim[]> {
    if (queues.length === 0) return [];
    this.#sweeper?.start();
    const max = Math.max(1, Math.trunc(options.max));
    const setKey = queues.length === 1 ? (queues[0] as string) : [...queues].sort().join('\n');
    const blocking = options.blockMs > 0;
    if (this.#clusterQueues) return this.#claimCluster(queues, max, options, setKey);
    if (!blocking || !this.#idleSets.get(setKey)) {
      const { claims } = await this.#claimScript(queues, max, options.noAck, undefined);
      if (claims.length > 0 || !blocking) {
        this.#noteIdle(setKey, claims.length < max);
        return claims;
      }
    }
    const pool = this.#pool;
    if (!pool) throw new ConnectionLost('The Redis store was closed while a consumer was waiting for messages.');
    const { keys, origin } = this.layout.consumeKeys(queues);
    const popped = await pool.brpop(keys, options.blockMs, options.signal);
    if (!popped) {
      this.#noteIdle(setKey, true);
      return [];
    }
    const [key, raw] = popped;
    const from = origin.get(key) ?? this.layout.parseListKey(key);
    const message: PoppedMessage = { queue: from.queue, step: from.step, key, raw };
    if (options.onEarlyClaims && !options.noAck) {
      const rest = await this.#takePoppedEarly(queues, max, message, options.onEarlyClaims);
      this.#noteIdle(setKey, rest.length + 1 < max);
      return rest;
    }
    const { claims } = await this.#recordPopped(queues, max, options.noAck, message);
    this.#noteIdle(setKey, claims.length < max);
    return claims;
  }

  /**
   * The cluster layout's claim: a script reaches one slot, so each queue is claimed by a call of its own (side by side:
   * the queues may live on different shards), and an idle consumer waits on every queue at once, one BRPOP each.
   */
  async #claimCluster(queues: readonly string[], max: number, options: ClaimOptions, setKey: string): Promise<Claim[]> {
    await this.#clusterQueues?.note(queues);
    const blocking = options.blockMs > 0;
    if (!blocking || !this.#idleSets.get(setKey)) {
      const claims = await this.#claimEach(queues, max, options.noAck);
      if (claims.length > 0 || !blocking) {
        this.#noteIdle(setKey, claims.length < max);
        return claims;
      }
    }
    const pool = this.#pool;
    if (!pool) throw new ConnectionLost('The Redis store was closed while a consumer was waiting for messages.');
    const popped = await this.#waitAny(pool, queues, options.blockMs, options.signal);
    const [message, ...extra] = popped;
    // What the other waits popped while the first woke them goes back to the head of its list as it was: never handed
    // out nor recorded, and taking it too could exceed `max` (the prefetch).
    await Promise.all(extra.map((late) => this.#putBack(late)));
    if (!message) {
      this.#noteIdle(setKey, true);
      return [];
    }
    if (options.onEarlyClaims && !options.noAck) {
      const rest = await this.#takePoppedEarly([message.queue], max, message, options.onEarlyClaims);
      this.#noteIdle(setKey, rest.length + 1 < max);
      return rest;
    }
    const { claims } = await this.#recordPopped([message.queue], max, options.noAck, message);
    this.#noteIdle(setKey, claims.length < max);
    return claims;
  }

  /**
   * Up to `max` claims over `queues`, one script call per queue, `max` shared out in the given order (the consumer's
   * rotation), again over the queues that gave their full share while room is left. Handed out interleaved — the
   * first of each queue, then the second of each... — as the one-script claim of Kombu's layout serves them.
   */
  async #claimEach(queues: readonly string[], max: number, noAck: boolean): Promise<RedisClaim[]> {
    const taken = new Map<string, RedisClaim[]>(queues.map((queue) => [queue, []]));
    let open = [...new Set(queues)];
    let room = max;
    let failure: unknown;
    while (room > 0 && open.length > 0) {
      const shares = open.map((_, index) => Math.floor(room / open.length) + (index < room % open.length ? 1 : 0));
      const asked = open.filter((_, index) => (shares[index] as number) > 0);
      const settled = await Promise.allSettled(asked.map((queue, index) => this.#claimScript([queue], shares[index] as number, noAck, undefined)));
      const full: string[] = [];
      settled.forEach((result, index) => {
        const queue = asked[index] as string;
        if (result.status === 'rejected') {
          failure ??= result.reason;
          return;
        }
        taken.get(queue)?.push(...result.value.claims);
        room -= result.value.claims.length;
        if (result.value.claims.length === shares[index]) full.push(queue);
      });
      open = full;
    }
    const claims = interleave([...taken.values()]);
    // Claims already made are handed out (their records exist; dropped here they would wait for their leases to run
    // out); the failure of another queue's call is reported only when nothing came of the whole claim.
    if (claims.length === 0 && failure !== undefined) throw failure;
    if (failure !== undefined) this.#reportError(failure);
    return claims;
  }

  /**
   * Waits on each queue's lists with a BRPOP of its own (a blocking command may name keys of one slot only); the
   * first message ends the others' waits. Resolves to what was popped — usually one message, more when waits ended
   * with a message of their own — or nothing when the time ran out or the wait was aborted.
   */
  async #waitAny(pool: BlockingWaiter, queues: readonly string[], blockMs: number, signal: AbortSignal | undefined): Promise<PoppedMessage[]> {
    const unique = [...new Set(queues)];
    const done = new AbortController();
    const abort = (): void => done.abort();
    signal?.addEventListener('abort', abort, { once: true });
    if (signal?.aborted) done.abort();
    try {
      const waits = unique.map(async (queue): Promise<PoppedMessage | undefined> => {
        const keys = this.layout.queueKeys(queue);
        const reply = await pool.brpop(keys, blockMs, done.signal);
        if (!reply) return undefined;
        done.abort();
        const [key, raw] = reply;
        return { queue, step: this.layout.parseListKey(key).step, key, raw };
      });
      const settled = await Promise.allSettled(waits);
      const popped = settled.flatMap((result) => (result.status === 'fulfilled' && result.value ? [result.value] : []));
      const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (popped.length === 0 && failed) throw failed.reason;
      return popped;
    } finally {
      signal?.removeEventListener('abort', abort);
    }
  }

  /** Puts a popped message that was never recorded back at the head of its list, exactly as it was. */
  async #putBack(popped: PoppedMessage): Promise<void> {
    try {
      await this.commands.rpush(popped.key, popped.raw);
    } catch (error) {
      this.#settings.warn(
        `kq/redis: could not return a message popped from ${JSON.stringify(popped.key)}; its envelope follows so it can be ` +
          `re-published by hand: ${popped.raw}`,
      );
      this.#reportError(error);
    }
  }

  /** Not async: one promise per ack (the batcher's), as a flood of short tasks acks at the rate it claims. */
  ack(claim: Claim): Promise<void> {
    const redisClaim = claim as RedisClaim;
    if (redisClaim.token === '') return Promise.resolve();
    if (redisClaim.recording) {
      return redisClaim.recording.then((recorded) => {
        if (!recorded) throw this.#stale('ack', redisClaim);
        return this.#ackRecorded(redisClaim);
      });
    }
    return this.#ackRecorded(redisClaim);
  }

  async restore(claim: Claim, position: 'head' | 'tail', options: RestoreOptions = {}): Promise<void> {
    const redisClaim = claim as RedisClaim;
    const { token, queue, step, raw, tag } = redisClaim;
    const target = this.layout.listKey(queue, step);
    // A claim never handed to a consumer (read ahead, then cancelled) goes back exactly as it was.
    const envelope = options.redelivered === false ? raw : markRedelivered(raw);
    if (token === '') {
      // A noAck claim lives only in this process (the consumer was cancelled before handing it out).
      await (position === 'head' ? this.commands.rpush(target, envelope) : this.commands.lpush(target, envelope));
      return;
    }
    if (redisClaim.recording && !(await redisClaim.recording)) throw this.#stale(position === 'tail' ? 'requeue' : 'restore', redisClaim);
    this.#leases.release(token);
    const done = await RESTORE.run(this.commands, [...this.#claimKeys(queue), target, this.#requestKey(queue)], [tag, token, position, envelope]);
    if (Number(done) !== 1) throw this.#stale(position === 'tail' ? 'requeue' : 'restore', redisClaim);
  }

  keepRejected(claim: Claim, reason: string): Promise<void> {
    return this.deadLetters.keep(claim.queue, (claim as RedisClaim).raw, reason);
  }

  /** A claim is ours while its record is on its way, and after that while no heartbeat found its lease taken. */
  holds(claim: Claim): boolean {
    const { token, recording } = claim as RedisClaim;
    return token === '' || recording !== undefined || this.#leases.holds(token);
  }

  // ——— internals ———

  #ackRecorded(claim: RedisClaim): Promise<void> {
    return this.#acks.add(claim);
  }

  /**
   * A fresh request key: the script remembers its reply there in case ioredis re-sends it after a reconnect (in the
   * cluster layout, in the slot of the queue the script works on).
   */
  #requestKey(queue: string): string {
    const id = `${this.#settings.storeId}:${++this.#requestSeq}`;
    return this.layout.cluster ? this.layout.requestKey(id, queue) : this.layout.requestKey(id);
  }

  /** The records a claim of `queue` is kept in: shared by every queue in Kombu's layout, the queue's own in the cluster's. */
  #claimKeys(queue: string): string[] {
    const { layout } = this;
    return [layout.scopedKey('unacked', queue), layout.scopedKey('unackedIndex', queue), layout.scopedKey('leases', queue), layout.scopedKey('holders', queue)];
  }

  /** The lease scope of a claim of `queue` (see LeaseKeeper): the queue in the cluster layout, '' in Kombu's. */
  #scope(queue: string): string {
    return this.layout.cluster ? queue : '';
  }

  async #claimScript(queues: readonly string[], max: number, noAck: boolean, popped: PoppedMessage | undefined): Promise<ClaimReply> {
    const { layout } = this;
    const tokenBase = `${this.#settings.storeId}:${++this.#claimSeq}`;
    // One queue per call in the cluster layout (its records and lists share its slot); every queue at once otherwise.
    const scope = queues[0] as string;
    const args: Array<string | number> = [
      layout.cluster ? `${layout.prefix}{` : layout.prefix,
      layout.sep,
      max,
      noAck ? 1 : 0,
      tokenBase,
      this.#settings.leaseMs,
      layout.steps.length,
      ...layout.steps,
      queues.length,
      ...queues,
    ];
    if (popped) args.push(1, popped.queue, popped.step, popped.raw, popped.token ?? '');
    else args.push(0);
    // Waiting acks ride along (one call instead of two), except in the cluster layout, where they may be of any queue.
    const acks = layout.cluster ? [] : this.#acks.take();
    args.push(acks.length);
    for (const ack of acks) args.push(ack.tag, ack.token);
    args.push(layout.cluster ? '}' : '');
    let reply: [string[], string[], number[]];
    try {
      reply = (await CLAIM.run(this.commands, [...this.#claimKeys(scope), layout.scopedKey('quarantine', scope), this.#requestKey(scope)], args)) as typeof reply;
    } catch (error) {
      this.#acks.failed(acks, error);
      throw error;
    }
    const [taken, bad, acked] = reply;
    acks.forEach((ack, index) => ack.settle(acked[index] === 1));
    for (let at = 0; at < bad.length; at += 2) {
      this.#quarantined++;
      this.#settings.warn(
        `kq/redis: moved an unreadable message from queue ${JSON.stringify(bad[at])} to ${layout.scopedKey('quarantine', scope)}: ${bad[at + 1]}`,
      );
    }
    const claims: RedisClaim[] = [];
    let poppedTag: string | undefined;
    for (let at = 0; at < taken.length; at += 5) {
      const queue = taken[at] as string;
      const step = Number(taken[at + 1]);
      const raw = taken[at + 2] as string;
      const token = taken[at + 3] as string;
      const tag = taken[at + 4] as string;
      if (at === 0 && popped?.token !== undefined && token === popped.token) {
        // Recorded under the token it was handed out with; the caller has the claim already.
        poppedTag = tag;
        continue;
      }
      let message: StoredMessage;
      try {
        message = decodeEnvelope(raw, { queue });
      } catch (error) {
        await this.#quarantineClaim(queue, step, raw, token, tag, error);
        continue;
      }
      if (token !== '') this.#leases.hold(token, tag, this.#scope(queue));
      claims.push({ queue, message, step, raw, token, tag });
    }
    return { claims, poppedTag };
  }

  /**
   * A message BRPOP woke up with, handed out before its claim is recorded, so its handler starts a round trip
   * sooner: the record (which also claims the rest of the batch) is sent first, then the message is decoded and
   * handed out while the record is on its way. Crash safety is Kombu's: it too records a popped message only after
   * the pop, and what has not reached Redis is lost with the process in both. Settles wait for the record, so an
   * ack can never reach Redis before the claim it settles.
   */
  async #takePoppedEarly(
    queues: readonly string[],
    max: number,
    popped: PoppedMessage,
    onEarlyClaims: (claims: Claim[]) => void,
  ): Promise<RedisClaim[]> {
    // `.0` never collides with the tokens the script makes from a claim's token base (`.1`, `.2`, ...).
    const token = `${this.#settings.storeId}:${++this.#claimSeq}.0`;
    const recording = this.#recordPopped(queues, max, false, { ...popped, token });
    let message: StoredMessage;
    try {
      message = decodeEnvelope(popped.raw, { queue: popped.queue });
    } catch (error) {
      // Unreadable: once recorded it is quarantined like any unreadable claim (the script quarantines what it cannot
      // read itself).
      const { claims, poppedTag } = await recording;
      if (poppedTag !== undefined) await this.#quarantineClaim(popped.queue, popped.step, popped.raw, token, poppedTag, error);
      return claims;
    }
    const tag = message.deliveryTag;
    const claim: RedisClaim = { queue: popped.queue, message, step: popped.step, raw: popped.raw, token, tag };
    claim.recording = recording.then(
      ({ poppedTag }) => {
        claim.recording = undefined;
        // A tag the script read differently would make every settle stale; the lease then brings the message back.
        if (poppedTag !== tag) return false;
        this.#leases.hold(token, tag, this.#scope(popped.queue));
        return true;
      },
      () => {
        claim.recording = undefined; // never held: `holds` says so
        return false;
      },
    );
    onEarlyClaims([claim]);
    return (await recording).claims;
  }

  /**
   * Records a message BRPOP popped (and claims more in the same call). Between the pop and this script the message
   * lives only here — Kombu's crash window, which kq only has on the idle-to-busy edge — so a failure is retried,
   * and if Redis stays unreachable the message is pushed back to the head of its list.
   */
  async #recordPopped(queues: readonly string[], max: number, noAck: boolean, popped: PoppedMessage): Promise<ClaimReply> {
    let lastError: unknown;
    for (let attempt = 0; attempt < RECORD_ATTEMPTS; attempt++) {
      try {
        return await this.#claimScript(queues, max, noAck, popped);
      } catch (error) {
        lastError = error;
        if (this.#closed) break;
        await sleep(backoffCountdown(attempt, { factor: 100, maximum: Infinity, jitter: false }));
      }
    }
    try {
      await this.commands.rpush(popped.key, popped.raw);
    } catch (error) {
      this.#settings.warn(
        `kq/redis: could not record or return a message popped from ${JSON.stringify(popped.key)}; its envelope follows so it can be ` +
          `re-published by hand: ${popped.raw}`,
      );
      throw error;
    }
    throw lastError;
  }

  async #quarantineClaim(queue: string, step: number, raw: string, token: string, tag: string, error: unknown): Promise<void> {
    const reason = error instanceof MalformedEnvelope ? error.reason : String(error);
    const key = this.layout.listKey(queue, step);
    this.#quarantined++;
    this.#settings.warn(`kq/redis: moved an unreadable message from queue ${JSON.stringify(queue)} to ${this.layout.scopedKey('quarantine', queue)}: ${reason}`);
    await QUARANTINE.run(
      this.commands,
      [...this.#claimKeys(queue), this.layout.scopedKey('quarantine', queue), this.#requestKey(queue)],
      [tag, token, quarantineRecord({ queue, key, reason, raw })],
    );
  }

  async #sendAcks(acks: ReadonlyArray<PendingAck<RedisClaim>>): Promise<void> {
    if (this.layout.cluster) {
      // One script call per queue (each queue's records are in its own slot), all under way at once.
      await Promise.all([...groupBy(acks, (ack) => ack.target.queue)].map(([queue, group]) => this.#sendAcksOf(queue, group)));
      return;
    }
    await this.#sendAcksOf('', acks);
  }

  async #sendAcksOf(queue: string, acks: ReadonlyArray<PendingAck<RedisClaim>>): Promise<void> {
    const args: string[] = [];
    for (const ack of acks) args.push(ack.tag, ack.token);
    const results = (await ACK.run(this.commands, [...this.#claimKeys(queue), this.#requestKey(queue)], args)) as number[];
    acks.forEach((ack, index) => ack.settle(results[index] === 1));
  }

  #noteIdle(setKey: string, idle: boolean): void {
    if (idle) {
      if (this.#idleSets.size > 1000) this.#idleSets.clear();
      this.#idleSets.set(setKey, true);
    } else {
      this.#idleSets.delete(setKey);
    }
  }

  async #renew(pairs: ReadonlyArray<readonly [tag: string, token: string, scope: string]>): Promise<string[]> {
    const commands = this.#commands;
    if (!commands || pairs.length === 0) return [];
    // One scope ('') in Kombu's layout; one per queue in the cluster layout, renewed side by side.
    const lost = await Promise.all(
      [...groupBy(pairs, ([, , scope]) => scope)].map(async ([scope, group]) => {
        const args: Array<string | number> = [this.#settings.leaseMs];
        for (const [tag, token] of group) args.push(tag, token);
        return (await RENEW.run(commands, this.#claimKeys(scope), args)) as string[];
      }),
    );
    return lost.flat();
  }

  #stale(action: string, claim: RedisClaim): StaleDeliveryError {
    return new StaleDeliveryError(
      `Cannot ${action} message ${claim.message.deliveryTag} from queue ${JSON.stringify(claim.queue)}: this consumer no longer ` +
        `holds it. Its lease (${this.#settings.leaseMs} ms) ran out without a heartbeat reaching Redis, so it was restored to ` +
        `the queue and may already be with another consumer; the ${action} was not applied. Keep handlers from blocking the ` +
        `event loop for that long, or raise leaseMs.`,
    );
  }

  #watchConnection(commands: RedisClient): void {
    commands.on('ready', () => {
      if (this.#everReady) this.#settings.onConnectionState('ready');
      this.#everReady = true;
    });
    commands.on('close', () => {
      if (this.#everReady && !this.#closed) this.#settings.onConnectionState('lost');
    });
  }

  #reportError(error: unknown): void {
    if (!this.#closed) this.#settings.onError(error);
  }

  #stopBackground(): void {
    this.#leases.stop();
    this.#promoter?.stop();
    this.#sweeper?.stop();
  }

  #requireSweeper(): Sweeper {
    if (!this.#sweeper) throw new ConnectionLost('The Redis store is not open; call transport.connect() first.');
    return this.#sweeper;
  }

  #forgetConnections(): void {
    this.#commands = undefined;
    this.#subscriber = undefined;
    this.#pool = undefined;
    this.#bus = undefined;
    this.#promoter = undefined;
    if (this.#sweeper) {
      this.#sweepCounts.leaseRestored += this.#sweeper.counts.leaseRestored;
      this.#sweepCounts.visibilityRestored += this.#sweeper.counts.visibilityRestored;
    }
    this.#sweeper = undefined;
    this.#everReady = false;
    this.#idleSets.clear();
  }
}

/** The first of each list, then the second of each, and so on. */
function interleave<T>(lists: ReadonlyArray<readonly T[]>): T[] {
  const out: T[] = [];
  const longest = Math.max(0, ...lists.map((list) => list.length));
  for (let at = 0; at < longest; at++) {
    for (const list of lists) if (at < list.length) out.push(list[at] as T);
  }
  return out;
}

/** The scopes of Kombu's layout: one set of claim and delayed records for every queue. */
const DEFAULT_SCOPES: readonly string[] = [''];

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

async function quit(client: RedisClient | undefined): Promise<void> {
  if (!client) return;
  try {
    await Promise.race([client.quit(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
  } catch {
    // already gone
  }
  client.disconnect();
}

function queueOptions(queue: Queue): Record<string, unknown> {
  return {
    durable: queue.durable,
    exclusive: queue.exclusive,
    autoDelete: queue.autoDelete,
    maxPriority: queue.maxPriority,
    messageTtl: queue.messageTtl,
    expires: queue.expires,
    deadLetterExchange: queue.deadLetterExchange,
    deadLetterRoutingKey: queue.deadLetterRoutingKey,
    maxLength: queue.maxLength,
    maxLengthBytes: queue.maxLengthBytes,
    queueType: queue.queueType,
    deliveryLimit: queue.deliveryLimit,
    arguments: queue.extraArguments,
  };
}

export function newStoreId(): string {
  return randomUUID().slice(0, 8);
}
