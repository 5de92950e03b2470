/** Renews up to this many leases per script call, so one heartbeat never blocks Redis for long. */
const RENEW_CHUNK = 500;

export interface LeaseKeeperOptions {
  intervalMs: number;
  /**
   * Renews the given (tag, token, scope) triples; resolves to the tokens that are no longer ours. The scope is what
   * `hold` was given: the queue in the cluster layout (whose slot holds the records), '' otherwise.
   */
  renew: (pairs: ReadonlyArray<readonly [tag: string, token: string, scope: string]>) => Promise<string[]>;
  onError: (error: unknown) => void;
}

/**
 * The heartbeat of the deliveries this process holds: every `intervalMs` it extends their kq leases and refreshes
 * their `unacked_index` scores in one script call. If the process dies, the heartbeat stops and the leases run out.
 */
export class LeaseKeeper {
  readonly #options: LeaseKeeperOptions;
  /** token → delivery tag and scope of every claim this process holds. */
  readonly #held = new Map<string, readonly [tag: string, scope: string]>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #lost = 0;

  constructor(options: LeaseKeeperOptions) {
    this.#options = options;
  }

  get held(): number {
    return this.#held.size;
  }

  /** Claims found taken from us by a sweep (the lease ran out before a heartbeat reached Redis). */
  get lost(): number {
    return this.#lost;
  }

  hold(token: string, tag: string, scope = ''): void {
    this.#held.set(token, [tag, scope]);
    this.#timer ??= this.#arm();
  }

  /** False once a heartbeat found the claim taken from us, or it was released. */
  holds(token: string): boolean {
    return this.#held.has(token);
  }

  release(token: string): void {
    this.#held.delete(token);
  }

  /** Runs one heartbeat now (also what the timer runs). */
  async renewNow(): Promise<void> {
    if (this.#running) return this.#running;
    this.#running = this.#renew().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#held.clear();
  }

  #arm(): NodeJS.Timeout {
    const timer = setInterval(() => {
      if (this.#held.size === 0) {
        clearInterval(timer);
        this.#timer = undefined;
        return;
      }
      this.renewNow().catch(this.#options.onError);
    }, this.#options.intervalMs);
    timer.unref();
    return timer;
  }

  async #renew(): Promise<void> {
    const pairs = [...this.#held].map(([token, [tag, scope]]) => [tag, token, scope] as const);
    for (let at = 0; at < pairs.length; at += RENEW_CHUNK) {
      const lost = await this.#options.renew(pairs.slice(at, at + RENEW_CHUNK));
      for (const token of lost) {
        if (this.#held.delete(token)) this.#lost++;
      }
    }
  }
}
