/** One message held until its ETA (what `inspect scheduled` lists). */
export interface ScheduledEntry<T> {
  readonly eta: Date;
  readonly item: T;
}

/**
 * Holds items until their time (Celery's worker timer for ETA tasks). Timers are unref'd so a held task never keeps
 * a stopping process alive; cancelling returns the items so they can be given back to the broker.
 */
export class EtaTimer<T> {
  readonly #entries = new Map<T, { eta: Date; timer: NodeJS.Timeout }>();

  schedule(item: T, eta: Date, fire: (item: T) => void): void {
    // setTimeout caps at 2^31-1 ms (~24.8 days); longer waits re-arm.
    const arm = (): NodeJS.Timeout => {
      const wait = eta.getTime() - Date.now();
      const timer = setTimeout(
        () => {
          if (eta.getTime() - Date.now() > 0) {
            const entry = this.#entries.get(item);
            if (entry) entry.timer = arm();
            return;
          }
          this.#entries.delete(item);
          fire(item);
        },
        Math.min(Math.max(0, wait), 2_147_483_647),
      );
      timer.unref();
      return timer;
    };
    this.#entries.set(item, { eta, timer: arm() });
  }

  cancel(item: T): boolean {
    const entry = this.#entries.get(item);
    if (!entry) return false;
    clearTimeout(entry.timer);
    this.#entries.delete(item);
    return true;
  }

  /** Stops every timer and returns what was held. */
  clear(): T[] {
    const items = [...this.#entries.keys()];
    for (const entry of this.#entries.values()) clearTimeout(entry.timer);
    this.#entries.clear();
    return items;
  }

  /** The first held item that `predicate` accepts. */
  find(predicate: (item: T) => boolean): T | undefined {
    for (const item of this.#entries.keys()) if (predicate(item)) return item;
    return undefined;
  }

  get size(): number {
    return this.#entries.size;
  }

  entries(): Array<ScheduledEntry<T>> {
    return [...this.#entries].map(([item, { eta }]) => ({ eta, item }));
  }
}
