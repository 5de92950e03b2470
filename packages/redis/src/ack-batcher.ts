/** Most acks sent in one script call. */
const MAX_BATCH = 512;

export interface PendingAck {
  readonly tag: string;
  readonly token: string;
  /** Resolves true when applied, false when the claim was stale. */
  readonly settle: (applied: boolean) => void;
  readonly fail: (error: unknown) => void;
}

/**
 * Collects acks for a moment so many go to Redis in one script call. The flush waits two event-loop turns: a
 * consumer loop yields one turn between batches, so its next claim usually comes first and carries the waiting acks
 * in the same script call (see CLAIM); a consumer that claims nothing gets them flushed on their own.
 */
export class AckBatcher {
  readonly #send: (acks: readonly PendingAck[]) => Promise<void>;
  #pending: PendingAck[] = [];
  #scheduled = false;

  constructor(send: (acks: readonly PendingAck[]) => Promise<void>) {
    this.#send = send;
  }

  get size(): number {
    return this.#pending.length;
  }

  add(tag: string, token: string): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ tag, token, settle: resolve, fail: reject });
      if (this.#pending.length >= MAX_BATCH) void this.flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => setImmediate(() => void this.flush()));
      }
    });
  }

  /** Takes up to `max` waiting acks, for a caller that sends them itself (and settles them). */
  take(max = MAX_BATCH): PendingAck[] {
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
