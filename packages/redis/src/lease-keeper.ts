/** Renews up to this many leases per script call, so one heartbeat never blocks Redis for long. */
const RENEW_CHUNK = 500;

export interface LeaseKeeperOptions<T> {
  intervalMs: number;
  /** Renews the given claims (re-scoring them); resolves to those that are no longer ours. */
  renew: (claims: readonly T[]) => Promise<readonly T[]>;
  onError: (error: unknown) => void;
}

/**
 * The heartbeat of the deliveries this process holds: every `intervalMs` it renews their leases (one script call per
 * chunk, see RENEW). If the process dies, the heartbeat stops and the leases run out.
 */
export class LeaseKeeper<T extends object> {
  readonly #options: LeaseKeeperOptions<T>;
  readonly #held = new Set<T>();
  /** Claims a heartbeat found taken from us. */
  readonly #taken = new WeakSet<T>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #lost = 0;

  constructor(options: LeaseKeeperOptions<T>) {
    this.#options = options;
  }

  get held(): number {
    return this.#held.size;
  }

  /** Claims found taken from us by a sweep (the lease ran out before a heartbeat reached Redis). */
  get lost(): number {
    return this.#lost;
  }

  /** The heartbeat under way, if any: a settle waits for it, as it re-scores the claims the settle names. */
  get renewing(): Promise<void> | undefined {
    return this.#running;
  }

  hold(claim: T): void {
    this.#held.add(claim);
    this.#timer ??= this.#arm();
  }

  /** False once a heartbeat found the claim taken from us, or it was released. */
  holds(claim: T): boolean {
    return this.#held.has(claim);
  }

  /** True once a heartbeat found the claim taken from us. */
  wasTaken(claim: T): boolean {
    return this.#taken.has(claim);
  }

  release(claim: T): void {
    this.#held.delete(claim);
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
    const claims = [...this.#held];
    for (let at = 0; at < claims.length; at += RENEW_CHUNK) {
      const lost = await this.#options.renew(claims.slice(at, at + RENEW_CHUNK));
      for (const claim of lost) {
        if (this.#held.delete(claim)) {
          this.#taken.add(claim);
          this.#lost++;
        }
      }
    }
  }
}
