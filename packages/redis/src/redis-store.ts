import {
  ConnectionLost,
  type Queue,
  StaleDeliveryError,
  encodeEnvelope,
  markRedelivered,
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
import { lpushInPieces, PushBatcher } from './push-batcher';
import { BlockingPool, type BlockingWaiter } from './blocking-pool';
import { ClusterBlockingPool } from './cluster-blocking-pool';
import { ClusterQueues } from './cluster-queues';
import { describeError, isConnectionError, rethrowRecoverable } from './connection-errors';
import { DEFAULT_DEAD_LETTER_MAX, DeadLetterList } from './dead-letter-list';
import type { ConnectionFactory, RedisClient } from './connection-factory';
import { openStoreClients, quitClient } from './store-clients';
import { ReplylessPublisher } from './replyless-publisher';
import { DelayedPromoter } from './delayed-promoter';
import { RedisBindings } from './redis-bindings';
import type { KeyLayout } from './key-layout';
import { LeaseKeeper } from './lease-keeper';
import { RESTORE } from './lua-scripts';
import { ClaimUpkeep } from './claim-upkeep';
import { RedisQueueAdmin } from './redis-queue-admin';
import { RedisClaimer, type RedisClaim } from './redis-claimer';
import { RedisFanoutBus } from './redis-fanout-bus';
import { MIN_INFLIGHT_GRACE_MS, Sweeper } from './sweeper';

export interface RedisStoreSettings {
  factory: ConnectionFactory;
  layout: KeyLayout;
  leaseMs: number;
  leaseRenewIntervalMs: number;
  promoteDelayed: boolean;
  autoPipelining: boolean;
  /** Lease sweep period, or with `leaseSweepFollowsExpiry` its longest gap (see Sweeper). */
  leaseSweepIntervalMs: number;
  leaseSweepFollowsExpiry?: boolean;
  visibilitySweepIntervalMs: number;
  /** Kombu `visibility_timeout`, seconds. */
  visibilityTimeout: number;
  /** Most rejected messages kept in `_kq.dead` (default 10 000). */
  deadLetterMax?: number;
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
  /**
   * Deliveries this process's frequent sweeps (every `sweepIntervalMs`, and `sweepLeases()`) restored: those whose
   * `unacked_index` score is older than now - visibility timeout, i.e. a kq lease that ran out or a Python delivery
   * past the visibility timeout (one rule, see lua/prelude.lua).
   */
  leaseRestored: number;
  /** Deliveries the same rule restored in this process's slow sweeps under Kombu's `unacked_mutex` (`sweepVisibility()`). */
  visibilityRestored: number;
}

/** How long acks made while a consumer waits in BRPOP may wait for its next claim call to carry them. */
const ACK_LINGER_MS = 20;

/**
 * Kombu's Redis layout (or kq's Redis Cluster layout, see KeyLayout) as a `VirtualStore`: lists per queue and priority step,
 * `_kombu.binding.*` sets, the `unacked` hash and index (whose scores are kq's leases and fences), PUB/SUB fanout —
 * plus kq's delayed set and quarantine list. Three kinds of connection: commands (auto-pipelined), one subscriber, and
 * one BRPOP connection per waiting consumer.
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
  readonly #leases: LeaseKeeper<RedisClaim>;
  readonly #acks: AckBatcher<RedisClaim>;
  readonly #claimer: RedisClaimer;
  readonly #upkeep: ClaimUpkeep;
  /** Rejected task messages with no dead-letter exchange to go to (`_kq.dead`). */
  readonly deadLetters: DeadLetterList;
  readonly #pushes: PushBatcher;
  /** Exchanges and bindings, in Kombu's binding sets. */
  readonly bindings: RedisBindings;
  readonly #queues: RedisQueueAdmin;
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
  #everReady = false;
  #closed = false;

  constructor(settings: RedisStoreSettings) {
    this.#settings = settings;
    this.layout = settings.layout;
    const leaseUs = settings.leaseMs * 1000;
    const visibilityUs = Math.round(settings.visibilityTimeout * 1_000_000);
    this.#upkeep = new ClaimUpkeep(settings.layout, leaseUs, visibilityUs);
    this.#acks = new AckBatcher<RedisClaim>((acks) => this.#sendAcks(acks), {
      staleError: (claim) => this.#stale('ack', claim),
      // The lease is kept (and renewed) until the ack has landed: released earlier, an ack held through an outage
      // would let the lease run out and the finished task run again.
      done: (claim) => this.#leases.release(claim),
      retryable: (error) => !this.#closed && isConnectionError(error),
      holding: (count, error) =>
        this.#settings.warn(`kq/redis: holding ${count} ack(s) until Redis answers again (${describeError(error)}); nothing is dropped`),
      // A consumer waiting in BRPOP records what wakes it with a claim call, which carries the acks made meanwhile: a
      // round trip's ack then costs no write of its own. They wait that long at most (Kombu's layout only: in the
      // cluster's, acks never ride on claims).
      lingerMs: () => (!this.layout.cluster && this.#claimer.waiting > 0 ? ACK_LINGER_MS : 0),
    });
    this.bindings = new RedisBindings(() => this.commands, settings.layout);
    this.#queues = new RedisQueueAdmin(() => this.commands, settings.layout);
    if (settings.layout.cluster) this.#clusterQueues = new ClusterQueues(() => this.commands, settings.layout);
    this.deadLetters = new DeadLetterList(() => this.commands, settings.layout, settings.deadLetterMax ?? DEFAULT_DEAD_LETTER_MAX, settings.warn);
    this.#pushes = new PushBatcher((key, values) => lpushInPieces(this.commands, key, values).catch(rethrowRecoverable));
    this.#leases = new LeaseKeeper<RedisClaim>({
      intervalMs: settings.leaseRenewIntervalMs,
      renew: (claims) => this.#renew(claims),
      onError: (error) => this.#reportError(error),
    });
    const acks = this.#acks;
    this.#claimer = new RedisClaimer({
      layout: settings.layout,
      leaseUs,
      visibilityUs,
      commands: () => this.commands,
      pool: () => this.#pool,
      clusterQueues: () => this.#clusterQueues,
      isClosed: () => this.#closed,
      // Not while a heartbeat is re-scoring: the acks would carry the scores it is replacing.
      takeAcks: () => (this.#leases.renewing ? [] : acks.take()),
      acksFailed: (failed, error) => acks.failed(failed, error),
      settleAck: (ack, result) => ack.settle(result !== -1),
      hold: (claim) => this.#leases.hold(claim),
      held: () => this.#leases.held,
      warn: settings.warn,
      reportError: (error) => this.#reportError(error),
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
    const { commands, subscriber } = await openStoreClients(factory, this.#settings.autoPipelining, (client) => this.#watchConnection(client));
    this.#commands = commands;
    this.#subscriber = subscriber;
    this.#pool = factory.cluster ? new ClusterBlockingPool(factory, commands as Cluster) : new BlockingPool(factory, commands as Redis);
    const scopes = (): Promise<readonly string[]> => this.queueScopes();
    const replyless = factory.cluster ? undefined : new ReplylessPublisher(() => factory.create('pub'));
    this.#bus = new RedisFanoutBus(layout, commands, subscriber, this.#settings.warn, replyless);
    this.#sweeper = new Sweeper({
      commands,
      layout,
      scopes,
      leaseSweepIntervalMs: this.#settings.leaseSweepIntervalMs,
      leaseSweepFollowsExpiry: this.#settings.leaseSweepFollowsExpiry ?? false,
      visibilitySweepIntervalMs: this.#settings.visibilitySweepIntervalMs,
      visibilityTimeout: this.#settings.visibilityTimeout,
      inflightGraceMs: Math.max(this.#settings.leaseMs, MIN_INFLIGHT_GRACE_MS),
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
    this.#bus?.close();
    await Promise.all([quitClient(this.#subscriber), quitClient(this.#commands)]);
    this.#forgetConnections();
  }

  /** Drops every connection at once, restoring nothing and renewing nothing: what a crashed process leaves behind. */
  terminate(): void {
    this.#closed = true;
    this.#acks.failAll(new ConnectionLost('The Redis store was terminated before this ack was sent.'));
    this.#pushes.failAll(new ConnectionLost('The Redis store was terminated before this message was sent.'));
    this.#stopBackground();
    this.#pool?.terminate();
    this.#bus?.close();
    this.#subscriber?.disconnect();
    this.#commands?.disconnect();
    this.#forgetConnections();
  }

  stats(): RedisStoreStats {
    return {
      held: this.#leases.held,
      leasesLost: this.#leases.lost,
      quarantined: this.#claimer.quarantined,
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

  /** Restores deliveries whose lease ran out, now (consuming processes also do it every `sweepIntervalMs`). */
  sweepLeases(): Promise<number> {
    return this.#requireSweeper().sweepLeases();
  }

  /** Runs the same sweep under Kombu's `unacked_mutex`, as Kombu's `restore_visible` (0 when another process holds it). */
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

  declareQueue(queue: Queue): Promise<void> {
    return this.#queues.declare(queue);
  }

  lookupQueue(name: string): Promise<Queue | undefined> {
    return this.#queues.lookup(name);
  }

  queueExists(name: string): Promise<boolean> {
    return this.#queues.exists(name);
  }

  async deleteQueue(name: string): Promise<number> {
    const count = await this.#queues.purge(name);
    await this.bindings.removeBindingsOf(name);
    await this.#queues.forget(name);
    await this.#clusterQueues?.forget(name);
    return count;
  }

  purgeQueue(name: string): Promise<number> {
    return this.#queues.purge(name);
  }

  /** Kombu's list per priority step, each with its length. */
  queueSizesByStep(name: string): Promise<ReadonlyArray<{ step: number; messageCount: number }>> {
    return this.#queues.sizesByStep(name);
  }

  queueSize(name: string): Promise<number> {
    return this.#queues.size(name);
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

  claim(queues: readonly string[], options: ClaimOptions): Promise<Claim[]> {
    this.#sweeper?.start();
    return this.#claimer.claim(queues, options);
  }

  /** Not async: one promise per ack (the batcher's), as a flood of short tasks acks at the rate it claims. */
  ack(claim: Claim): Promise<void> {
    const redisClaim = claim as RedisClaim;
    if (redisClaim.noAck) return Promise.resolve();
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
    const { queue, step, raw, tag } = redisClaim;
    const target = this.layout.listKey(queue, step);
    // A claim never handed to a consumer (read ahead, then cancelled) goes back exactly as it was.
    const envelope = options.redelivered === false ? raw : markRedelivered(raw);
    if (redisClaim.noAck) {
      // A noAck claim lives only in this process (the consumer was cancelled before handing it out).
      await (position === 'head' ? this.commands.rpush(target, envelope) : this.commands.lpush(target, envelope));
      return;
    }
    const action = position === 'tail' ? 'requeue' : 'restore';
    if (redisClaim.recording && !(await redisClaim.recording)) throw this.#stale(action, redisClaim);
    if (this.#leases.wasTaken(redisClaim)) throw this.#stale(action, redisClaim);
    await this.#leases.renewing?.catch(() => undefined);
    this.#leases.release(redisClaim);
    const keys = [this.layout.scopedKey('unacked', queue), this.layout.scopedKey('unackedIndex', queue), target];
    // 0: the tag is gone (a sweep already brought the message back, or this is ioredis re-sending it): nothing to do.
    const done = await RESTORE.run(this.commands, keys, [tag, redisClaim.score, position, envelope]);
    if (Number(done) === -1) throw this.#stale(action, redisClaim);
  }

  keepRejected(claim: Claim, reason: string): Promise<void> {
    return this.deadLetters.keep(claim.queue, (claim as RedisClaim).raw, reason);
  }

  /** A claim is ours while its record is on its way, and after that while no heartbeat found its lease taken. */
  holds(claim: Claim): boolean {
    const redisClaim = claim as RedisClaim;
    return redisClaim.noAck || redisClaim.recording !== undefined || this.#leases.holds(redisClaim);
  }

  // ——— internals ———

  #ackRecorded(claim: RedisClaim): Promise<void> {
    // Taken back by a sweep, as a heartbeat found: the ack is not applied.
    if (this.#leases.wasTaken(claim)) return Promise.reject(this.#stale('ack', claim));
    claim.settling = true;
    return this.#acks.add(claim);
  }

  async #sendAcks(acks: ReadonlyArray<PendingAck<RedisClaim>>): Promise<void> {
    // A heartbeat under way re-scores these claims: their scores are read once it is done.
    await this.#leases.renewing?.catch(() => undefined);
    await this.#upkeep.sendAcks(this.commands, acks);
  }

  async #renew(claims: readonly RedisClaim[]): Promise<RedisClaim[]> {
    const commands = this.#commands;
    if (!commands || claims.length === 0) return [];
    return this.#upkeep.renew(commands, claims);
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
    this.#claimer.reset();
  }
}

/** The scopes of Kombu's layout: one set of claim and delayed records for every queue. */
const DEFAULT_SCOPES: readonly string[] = [''];
