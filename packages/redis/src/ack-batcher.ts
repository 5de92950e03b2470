/** Most acks sent in one script call. */
const MAX_BATCH = 512;

/** What an ack needs to find its claim in Redis: the tag, and the score (the fence) read when the ack is sent. */
export interface AckTarget {
  readonly tag: string;
  readonly score: string;
}

/** How the batcher's owner is told about its acks. */
export interface AckHooks<T extends AckTarget> {
  /** The error an ack is rejected with when Redis says the claim is no longer ours. */
  staleError(target: T): Error;
  /** The ack is over (applied, stale or failed for good): the claim need not be held any longer. */
  done(target: T): void;
  /** Whether a failed send is worth sending again (the connection dropped) rather than failing its acks. */
  retryable(error: unknown): boolean;
  /** Acks are being held for a connection that is down; called once per outage. */
  holding(count: number, error: unknown): void;
  /**
   * How long new acks may wait for a claim call to carry them (see `take`) before they are sent on their own; 0 for
   * the usual two event-loop turns.
   */
  lingerMs?(): number;
}

/** Backoff between sends of acks held through an outage. */
const RETRY_DELAYS_MS = [100, 200, 500, 1000, 2000];

/** An ack waiting to be sent: one object per ack, no closures (a flood of short tasks makes many). */
export class PendingAck<T extends AckTarget = AckTarget> {
  readonly target: T;
  readonly #resolve: () => void;
  readonly #reject: (error: unknown) => void;
  readonly #hooks: AckHooks<T>;

  constructor(target: T, resolve: () => void, reject: (error: unknown) => void, hooks: AckHooks<T>) {
    this.target = target;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#hooks = hooks;
  }

  get tag(): string {
    return this.target.tag;
  }

  /** Resolves the ack when applied; rejects it with the stale error when the claim was no longer ours. */
  settle(applied: boolean): void {
    this.#hooks.done(this.target);
    if (applied) this.#resolve();
    else this.#reject(this.#hooks.staleError(this.target));
  }

  fail(error: unknown): void {
    this.#hooks.done(this.target);
    this.#reject(error);
  }
}

/**
 * Collects acks for a moment so many go to Redis in one script call. The flush waits two event-loop turns: a
 * consumer loop yields one turn between batches, so its next claim usually comes first and carries the waiting acks
 * in the same script call (see CLAIM); a consumer that claims nothing gets them flushed on their own.
 *
 * An ack is never dropped because Redis was away: a send that fails on the connection puts its acks back to be sent
 * again with backoff (the owner keeps their claims' leases renewed meanwhile), so a task that finished during an
 * outage is not run again when its lease would otherwise run out. What waits is bounded by the prefetch: one ack
 * per delivery held.
 */
export class AckBatcher<T extends AckTarget = AckTarget> {
  readonly #send: (acks: ReadonlyArray<PendingAck<T>>) => Promise<void>;
  readonly #hooks: AckHooks<T>;
  #pending: Array<PendingAck<T>> = [];
  /** The flush scheduled for the waiting acks (0: none), so a timer of acks taken meanwhile does nothing. */
  #scheduled = 0;
  #schedules = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  /** Consecutive failed sends (0 while Redis answers). */
  #failures = 0;

  constructor(send: (acks: ReadonlyArray<PendingAck<T>>) => Promise<void>, hooks: AckHooks<T>) {
    this.#send = send;
    this.#hooks = hooks;
  }

  get size(): number {
    return this.#pending.length;
  }

  /** Resolves once the ack is applied; rejects with the stale error, or with why it could not be sent. */
  add(target: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push(new PendingAck(target, resolve, reject, this.#hooks));
      if (this.#retryTimer) return; // held for an outage: goes with the next retry
      if (this.#pending.length >= MAX_BATCH) void this.flush();
      else if (this.#scheduled === 0) {
        const id = ++this.#schedules;
        this.#scheduled = id;
        const linger = this.#hooks.lingerMs?.() ?? 0;
        if (linger > 0) setTimeout(() => void this.#flushScheduled(id, true), linger).unref();
        else setImmediate(() => setImmediate(() => void this.#flushScheduled(id, false)));
      }
    });
  }

  /** Takes up to `max` waiting acks, for a caller that sends them itself (and settles them). */
  take(max = MAX_BATCH): Array<PendingAck<T>> {
    if (this.#pending.length <= max) {
      // All taken: a scheduled flush would find nothing (new acks schedule their own).
      this.#scheduled = 0;
      const all = this.#pending;
      this.#pending = [];
      return all;
    }
    return this.#pending.splice(0, max);
  }

  /**
   * The scheduled flush: nothing to do when a claim call took its acks meanwhile (or a flush sent them), even when
   * newer acks wait (they have a flush of their own). An ack made just before its consumer went back to waiting (a
   * round trip's: the result is stored, the ack made, then the consumer waits for the next message) still lingers once
   * the consumer waits, so the claim that records the next message carries it rather than a script call and a socket
   * write of its own.
   */
  #flushScheduled(id: number, lingered: boolean): Promise<void> {
    if (this.#scheduled !== id) return Promise.resolve();
    const linger = lingered ? 0 : (this.#hooks.lingerMs?.() ?? 0);
    if (linger > 0) {
      setTimeout(() => void this.#flushScheduled(id, true), linger).unref();
      return Promise.resolve();
    }
    return this.flush();
  }

  /** Sends everything waiting now; resolves once sent (failures reach the acks' own promises, or are retried). */
  flush(): Promise<void> {
    this.#scheduled = 0;
    const sends: Promise<void>[] = [];
    while (this.#pending.length > 0) {
      const batch = this.take();
      sends.push(
        this.#send(batch).then(
          () => {
            this.#failures = 0;
          },
          (error: unknown) => this.failed(batch, error),
        ),
      );
    }
    return Promise.all(sends).then(() => undefined);
  }

  /**
   * Acks whose send failed (here, or carried by another script call): put back to go again after a backoff when the
   * connection dropped, failed otherwise.
   */
  failed(batch: ReadonlyArray<PendingAck<T>>, error: unknown): void {
    if (!this.#hooks.retryable(error)) {
      for (const ack of batch) ack.fail(error);
      return;
    }
    if (this.#failures === 0) this.#hooks.holding(batch.length + this.#pending.length, error);
    const delay = RETRY_DELAYS_MS[Math.min(this.#failures, RETRY_DELAYS_MS.length - 1)] as number;
    this.#failures++;
    this.#pending = [...batch, ...this.#pending];
    if (this.#retryTimer) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.flush();
    }, delay);
  }

  /** Fails every waiting ack (the store is closing without a connection to send them on). */
  failAll(error: unknown): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    for (const ack of this.take(Number.MAX_SAFE_INTEGER)) ack.fail(error);
  }
}
