/** Most acks sent in one script call. */
const MAX_BATCH = 512;

/** What an ack needs to find its claim in Redis. */
export interface AckTarget {
  readonly tag: string;
  readonly token: string;
}

/** An ack waiting to be sent: one object per ack, no closures (a flood of short tasks makes many). */
export class PendingAck<T extends AckTarget = AckTarget> {
  readonly target: T;
  readonly #resolve: () => void;
  readonly #reject: (error: unknown) => void;
  readonly #staleError: (target: T) => Error;

  constructor(target: T, resolve: () => void, reject: (error: unknown) => void, staleError: (target: T) => Error) {
    this.target = target;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#staleError = staleError;
  }

  get tag(): string {
    return this.target.tag;
  }

  get token(): string {
    return this.target.token;
  }

  /** Resolves the ack when applied; rejects it with the stale error when the claim was no longer ours. */
  settle(applied: boolean): void {
    if (applied) this.#resolve();
    else this.#reject(this.#staleError(this.target));
  }

  fail(error: unknown): void {
    this.#reject(error);
  }
}

/**
 * Collects acks for a moment so many go to Redis in one script call. The flush waits two event-loop turns: a
 * consumer loop yields one turn between batches, so its next claim usually comes first and carries the waiting acks
 * in the same script call (see CLAIM); a consumer that claims nothing gets them flushed on their own.
 */
export class AckBatcher<T extends AckTarget = AckTarget> {
  readonly #send: (acks: ReadonlyArray<PendingAck<T>>) => Promise<void>;
  readonly #staleError: (target: T) => Error;
  #pending: Array<PendingAck<T>> = [];
  #scheduled = false;

  /** `staleError` makes the error an ack is rejected with when Redis says the claim is no longer ours. */
  constructor(send: (acks: ReadonlyArray<PendingAck<T>>) => Promise<void>, staleError: (target: T) => Error) {
    this.#send = send;
    this.#staleError = staleError;
  }

  get size(): number {
    return this.#pending.length;
  }

  /** Resolves once the ack is applied; rejects with the stale error, or with why it could not be sent. */
  add(target: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push(new PendingAck(target, resolve, reject, this.#staleError));
      if (this.#pending.length >= MAX_BATCH) void this.flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => setImmediate(() => void this.flush()));
      }
    });
  }

  /** Takes up to `max` waiting acks, for a caller that sends them itself (and settles them). */
  take(max = MAX_BATCH): Array<PendingAck<T>> {
    if (this.#pending.length <= max) {
      const all = this.#pending;
      this.#pending = [];
      return all;
    }
    return this.#pending.splice(0, max);
  }

  /** Sends everything waiting now; resolves once sent (failures reach the acks' own promises). */
  flush(): Promise<void> {
    this.#scheduled = false;
    const sends: Promise<void>[] = [];
    while (this.#pending.length > 0) {
      const batch = this.take();
      sends.push(
        this.#send(batch).catch((error: unknown) => {
          for (const ack of batch) ack.fail(error);
        }),
      );
    }
    return Promise.all(sends).then(() => undefined);
  }

  /** Fails every waiting ack (the store is closing without a connection to send them on). */
  failAll(error: unknown): void {
    for (const ack of this.take(Number.MAX_SAFE_INTEGER)) ack.fail(error);
  }
}
