import { NotificationListener } from './notification-listener';

export interface ReadyListenerOptions {
  connectionString: string;
  /** The NOTIFY channel the ready trigger and delayed pushes write to. */
  channel: string;
  /** A delayed message was pushed, due at this epoch ms. */
  onDue: (dueAt: number) => void;
  logger: { warn(message: string): void };
}

interface Waiter {
  /** The queue ids the claim waits for (null: any queue). */
  readonly ids: ReadonlySet<string> | null;
  wake(): void;
}

/**
 * Wakes idle claims: the ready trigger NOTIFYs with the queue id for every row that becomes visible, delayed pushes
 * NOTIFY their due time (`due:<epoch ms>`). A claim waits for its own queues only — a worker's task queue, its
 * remote-control queue and its event queue each wait in a claim, and a message for one must not send the other two
 * to the database for nothing. Without a connection, waits run to their timeout, which makes them polls.
 */
export class ReadyListener {
  readonly #listener: NotificationListener;
  readonly #waiters = new Set<Waiter>();
  /** Wake-ups so far, in all and per queue id, so a claim that found nothing knows whether one came while it looked. */
  #all = 0;
  /** Wake-ups of everyone (a lost connection, stop): they count for every queue. */
  #everyone = 0;
  readonly #byQueue = new Map<string, number>();

  constructor(options: ReadyListenerOptions) {
    this.#listener = new NotificationListener({
      connectionString: options.connectionString,
      channel: options.channel,
      onNotification: (payload) => {
        if (payload.startsWith('due:')) options.onDue(Number(payload.slice(4)));
        else this.#wake(payload);
      },
      onLost: () => this.#wake(null),
      logger: options.logger,
    });
  }

  start(): Promise<void> {
    return this.#listener.start();
  }

  async stop(): Promise<void> {
    this.#wake(null);
    await this.#listener.stop();
  }

  /** A count that changes whenever a wake-up comes for one of these queue ids (null: for any queue). */
  generation(ids: readonly string[] | null): number {
    if (ids === null) return this.#all + this.#everyone;
    let sum = this.#everyone;
    for (const id of ids) sum += this.#byQueue.get(id) ?? 0;
    return sum;
  }

  /**
   * Resolves when a message becomes ready in one of the queues `ids` names (null: any queue), after `timeoutMs`, or
   * when `signal` aborts — at once when a wake-up for them came since `since` (a {@link generation} read before the
   * claim that found nothing).
   */
  waitForReady(timeoutMs: number, signal: AbortSignal | undefined, since: number, ids: readonly string[] | null = null): Promise<void> {
    if (this.generation(ids) !== since) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const waiter: Waiter = {
        ids: ids === null ? null : new Set(ids),
        wake: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', waiter.wake);
          this.#waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(waiter.wake, Math.max(0, timeoutMs));
      signal?.addEventListener('abort', waiter.wake, { once: true });
      this.#waiters.add(waiter);
    });
  }

  /** A wake-up for queue `id`, or for everyone (null). */
  #wake(id: string | null): void {
    this.#all++;
    if (id === null) this.#everyone++;
    else this.#byQueue.set(id, (this.#byQueue.get(id) ?? 0) + 1);
    for (const waiter of [...this.#waiters]) if (id === null || waiter.ids === null || waiter.ids.has(id)) waiter.wake();
  }
}
