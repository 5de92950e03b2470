import { NotificationListener } from './notification-listener';

export interface ReadyListenerOptions {
  connectionString: string;
  /** The NOTIFY channel the ready trigger and delayed pushes write to. */
  channel: string;
  /** A delayed message was pushed, due at this epoch ms. */
  onDue: (dueAt: number) => void;
  logger: { warn(message: string): void };
}

/**
 * Wakes idle claims: the ready trigger NOTIFYs for every row that becomes visible, delayed pushes NOTIFY their due
 * time (`due:<epoch ms>`). Without a connection, waits run to their timeout, which makes them polls.
 */
export class ReadyListener {
  readonly #listener: NotificationListener;
  readonly #waiters = new Set<() => void>();
  /** Counts wake-ups, so a claim that found nothing knows whether one came while it looked. */
  #generation = 0;

  constructor(options: ReadyListenerOptions) {
    this.#listener = new NotificationListener({
      connectionString: options.connectionString,
      channel: options.channel,
      onNotification: (payload) => {
        if (payload.startsWith('due:')) options.onDue(Number(payload.slice(4)));
        else this.#wakeAll();
      },
      onLost: () => this.#wakeAll(),
      logger: options.logger,
    });
  }

  start(): Promise<void> {
    return this.#listener.start();
  }

  async stop(): Promise<void> {
    this.#wakeAll();
    await this.#listener.stop();
  }

  get generation(): number {
    return this.#generation;
  }

  /**
   * Resolves when a message becomes ready anywhere, after `timeoutMs`, or when `signal` aborts — at once when a
   * wake-up came since `since` (a {@link generation} read before the claim that found nothing).
   */
  waitForReady(timeoutMs: number, signal: AbortSignal | undefined, since: number): Promise<void> {
    if (this.#generation !== since) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      signal?.addEventListener('abort', done, { once: true });
      this.#waiters.add(done);
    });
  }

  #wakeAll(): void {
    this.#generation++;
    for (const wake of [...this.#waiters]) wake();
  }
}
