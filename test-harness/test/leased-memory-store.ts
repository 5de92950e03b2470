import {
  ConnectionLost,
  type MemoryBroker,
  MemoryStore,
  StaleDeliveryError,
  VirtualTransport,
  type BindingRecord,
  type Claim,
  type ClaimOptions,
  type Exchange,
  type Queue,
  type RestoreOptions,
  type StoredMessage,
  type TransportDescription,
  type VirtualStore,
  type VirtualStoreFeatures,
} from '@kq/core';

/** One store's hold on a claimed message, shared by every store on the broker (as a Redis hash would be). */
interface Lease {
  readonly claim: Claim;
  readonly holder: LeasedMemoryStore;
  expiresAt: number;
  /** Another store's sweep gave the message back to its queue: the holder may no longer settle it. */
  takenBack: boolean;
}

/** The bugs a lease store can have that the conformance suite must catch (each found once in a real store). */
export interface LeaseStoreDefects {
  /** `ack`/`restore` go through even after the lease was taken back. */
  settlesStaleClaims?: boolean;
  /** The heartbeat never runs: a live holder loses what it holds after one lease. */
  neverRenews?: boolean;
  /** `noAck` claims are kept under a lease (so they come back after a crash). */
  leasesNoAckClaims?: boolean;
  /** `deleteQueue` leaves the queue's bindings, so later publishes still route to its name. */
  keepsBindingsOfDeletedQueues?: boolean;
  /** `claim` serves the first non-empty queue's most urgent message, not the most urgent across all queues. */
  prioritisesFirstQueueOnly?: boolean;
  /** `restore` always marks the message redelivered, even for claims that were never handed to a consumer. */
  alwaysMarksRedelivered?: boolean;
  /** `claim` keeps waiting (and takes a message) after its signal was aborted. */
  ignoresAbort?: boolean;
  /** `restore` puts every message back at the head, whatever position it was asked for. */
  requeuesToHead?: boolean;
  /** `restore` puts a message back into the default priority step instead of its own. */
  restoresIntoDefaultStep?: boolean;
  /** `purgeQueue` empties only the default priority step. */
  purgesDefaultStepOnly?: boolean;
  /** `queueSize` counts only the default priority step. */
  countsDefaultStepOnly?: boolean;
  /** `ack` forgets the message but leaves its lease record, so a sweep restores it once the lease runs out. */
  ackLeavesLease?: boolean;
  /** `addBinding` keeps one binding per queue and routing key, dropping a second one with other arguments. */
  keysBindingsWithoutArguments?: boolean;
  /** Due delayed messages are found only on a slow timer: each arrives up to a second late. */
  delaysLate?: boolean;
}

const leasesByBroker = new WeakMap<MemoryBroker, Map<Claim, Lease>>();

/**
 * The memory store with leases, as Redis and PostgreSQL keep them: a claim is held for `leaseMs`, renewed by the
 * holder's heartbeat, and given back to its queue (redelivered) by any store's sweep once it ran out; a settle of a
 * claim that was taken back is refused with `StaleDeliveryError`. `crash()` stops the heartbeat without giving
 * anything back, as a killed process would. Defects can be planted to prove the conformance suite catches them.
 */
export class LeasedMemoryStore implements VirtualStore {
  readonly features: VirtualStoreFeatures;
  readonly #inner: MemoryStore;
  readonly #broker: MemoryBroker;
  readonly #leaseMs: number;
  readonly #defects: LeaseStoreDefects;
  readonly #renews: boolean;
  /** This store's own leases, kept after a sweep took one back so a late settle can be refused. */
  readonly #mine = new WeakMap<Claim, Lease>();
  #timers: NodeJS.Timeout[] = [];
  #dead = false;

  /** `renews: false` makes a frozen process's store: it claims and settles, but its heartbeat never runs. */
  constructor(broker: MemoryBroker, leaseMs: number, defects: LeaseStoreDefects = {}, renews = true) {
    this.#renews = renews;
    this.#inner = new MemoryStore(broker);
    this.#broker = broker;
    this.#leaseMs = leaseMs;
    this.#defects = defects;
    this.features = { ...this.#inner.features, crashRecovery: true };
  }

  get #leases(): Map<Claim, Lease> {
    let leases = leasesByBroker.get(this.#broker);
    if (!leases) leasesByBroker.set(this.#broker, (leases = new Map()));
    return leases;
  }

  async open(): Promise<void> {
    const every = Math.max(10, Math.floor(this.#leaseMs / 4));
    if (this.#renews && !this.#defects.neverRenews) this.#timers.push(setInterval(() => this.#renew(), every));
    this.#timers.push(setInterval(() => void this.#sweep(), every));
  }

  async close(): Promise<void> {
    for (const timer of this.#timers.splice(0)) clearInterval(timer);
  }

  /** Stops the heartbeat and the sweep, gives nothing back and answers nothing more: what a SIGKILL leaves behind. */
  crash(): void {
    this.#dead = true;
    for (const timer of this.#timers.splice(0)) clearInterval(timer);
  }

  #alive(): void {
    if (this.#dead) throw new ConnectionLost('This store crashed (a test stands for a killed process).');
  }

  #renew(): void {
    const until = Date.now() + this.#leaseMs;
    // Only what this store still counts as held: an ack that forgot the claim but left its record renews it no more.
    for (const lease of this.#leases.values()) if (this.#mine.get(lease.claim) === lease && !lease.takenBack) lease.expiresAt = until;
  }

  async #sweep(): Promise<void> {
    const now = Date.now();
    for (const [claim, lease] of this.#leases) {
      if (lease.takenBack || lease.expiresAt > now) continue;
      lease.takenBack = true;
      this.#leases.delete(claim);
      await this.#inner.restore(claim, 'head', { redelivered: true });
    }
  }

  declareExchange(exchange: Exchange): Promise<void> {
    return this.#inner.declareExchange(exchange);
  }

  lookupExchange(name: string): Promise<Exchange | undefined> {
    return this.#inner.lookupExchange(name);
  }

  deleteExchange(name: string): Promise<void> {
    return this.#inner.deleteExchange(name);
  }

  async addBinding(exchange: string, binding: BindingRecord): Promise<void> {
    const kept = this.#broker.bindings.get(exchange) ?? [];
    if (this.#defects.keysBindingsWithoutArguments && kept.some((record) => record.queue === binding.queue && record.routingKey === binding.routingKey)) return;
    await this.#inner.addBinding(exchange, binding);
  }

  removeBinding(exchange: string, binding: BindingRecord): Promise<void> {
    return this.#inner.removeBinding(exchange, binding);
  }

  listBindings(exchange: string): Promise<readonly BindingRecord[]> {
    return this.#inner.listBindings(exchange);
  }

  declareQueue(queue: Queue): Promise<void> {
    return this.#inner.declareQueue(queue);
  }

  lookupQueue(name: string): Promise<Queue | undefined> {
    return this.#inner.lookupQueue(name);
  }

  queueExists(name: string): Promise<boolean> {
    return this.#inner.queueExists(name);
  }

  async deleteQueue(name: string): Promise<number> {
    if (!this.#defects.keepsBindingsOfDeletedQueues) return this.#inner.deleteQueue(name);
    const bindings = new Map([...this.#broker.bindings].map(([exchange, records]) => [exchange, [...records]]));
    const count = await this.#inner.deleteQueue(name);
    for (const [exchange, records] of bindings) this.#broker.bindings.set(exchange, records);
    return count;
  }

  async purgeQueue(name: string): Promise<number> {
    if (!this.#defects.purgesDefaultStepOnly) return this.#inner.purgeQueue(name);
    return this.#broker.queue(name, false)?.buckets[0]?.clear() ?? 0;
  }

  async queueSize(name: string): Promise<number> {
    if (!this.#defects.countsDefaultStepOnly) return this.#inner.queueSize(name);
    return this.#broker.sizesByStep(name).find((entry) => entry.step === 0)?.messageCount ?? 0;
  }

  push(queue: string, message: StoredMessage, priority: number): Promise<void> {
    return this.#inner.push(queue, message, priority);
  }

  pushDelayed(queue: string, message: StoredMessage, priority: number, dueAt: number): Promise<void> {
    return this.#inner.pushDelayed(queue, message, priority, this.#defects.delaysLate ? dueAt + 1000 : dueAt);
  }

  async claim(queues: readonly string[], options: ClaimOptions): Promise<Claim[]> {
    this.#alive();
    const passed: ClaimOptions = this.#defects.ignoresAbort ? withoutSignal(options) : options;
    let claims: Claim[] = [];
    if (this.#defects.prioritisesFirstQueueOnly) {
      for (const queue of queues) {
        claims = await this.#inner.claim([queue], { ...passed, blockMs: 0 });
        if (claims.length > 0) break;
      }
      if (claims.length === 0 && options.blockMs > 0) claims = await this.#inner.claim(queues, passed);
    } else {
      claims = await this.#inner.claim(queues, passed);
    }
    if (options.noAck && !this.#defects.leasesNoAckClaims) return claims;
    const expiresAt = Date.now() + this.#leaseMs;
    for (const claim of claims) {
      const lease: Lease = { claim, holder: this, expiresAt, takenBack: false };
      this.#leases.set(claim, lease);
      this.#mine.set(claim, lease);
    }
    return claims;
  }

  holds(claim: Claim): boolean {
    return this.#mine.get(claim)?.takenBack !== true;
  }

  async ack(claim: Claim): Promise<void> {
    if (this.#defects.ackLeavesLease) {
      this.#alive();
      this.#mine.delete(claim);
    } else {
      this.#settle(claim);
    }
    await this.#inner.ack();
  }

  async restore(claim: Claim, position: 'head' | 'tail', options: RestoreOptions = {}): Promise<void> {
    this.#settle(claim);
    const where = this.#defects.requeuesToHead ? 'head' : position;
    const stepped = this.#defects.restoresIntoDefaultStep ? { ...claim, priority: 0 } : claim;
    await this.#inner.restore(stepped, where, this.#defects.alwaysMarksRedelivered ? { redelivered: true } : options);
  }

  /** Ends the claim's lease; refuses (fencing) when another store's sweep took it back meanwhile. */
  #settle(claim: Claim): void {
    this.#alive();
    const lease = this.#mine.get(claim);
    if (!lease) return; // a noAck claim: nothing held
    if (lease.takenBack && !this.#defects.settlesStaleClaims) {
      throw new StaleDeliveryError('The lease on this delivery ran out and the message went back to its queue; it was not settled here.');
    }
    this.#mine.delete(claim);
    this.#leases.delete(claim);
  }
}

function withoutSignal(options: ClaimOptions): ClaimOptions {
  const copy = { ...options };
  delete copy.signal;
  return copy;
}

/** A transport on the leased memory store: a second one on the same broker stands for a second process. */
export class LeasedMemoryTransport extends VirtualTransport {
  readonly name = 'leased-memory';
  readonly leaseStore: LeasedMemoryStore;
  readonly #broker: MemoryBroker;

  /**
   * `pollIntervalMs` defaults to a long poll: claims wait on the broker's wake-ups, so only a claim that ignores its
   * cancel would sit it out.
   */
  constructor(broker: MemoryBroker, leaseMs: number, defects: LeaseStoreDefects = {}, renews = true, pollIntervalMs = 5000) {
    const store = new LeasedMemoryStore(broker, leaseMs, defects, renews);
    super(store, { pollIntervalMs });
    this.leaseStore = store;
    this.#broker = broker;
  }

  describe(): TransportDescription {
    return { transport: 'leased-memory', hostname: this.#broker.name, port: null, virtualHost: null, userid: null, ssl: false };
  }
}
