import pg from 'pg';

export interface NotificationListenerOptions {
  connectionString: string;
  /** The channel to LISTEN on. */
  channel: string;
  onNotification: (payload: string) => void;
  /** The connection dropped: notifications may have been missed until it is back. */
  onLost: () => void;
  logger: { warn(message: string): void };
}

const RECONNECT_DELAYS_MS = [100, 500, 1000, 2000, 5000];

/**
 * A dedicated LISTEN connection (a pooled one cannot listen: it is handed to other queries). When it drops it is
 * re-opened with backoff; users treat `onLost` as "look again", so a missed notification only delays a wake-up.
 */
export class NotificationListener {
  readonly #options: NotificationListenerOptions;
  #client: pg.Client | undefined;
  #stopped = false;
  #attempt = 0;
  #reconnectTimer: NodeJS.Timeout | undefined;

  constructor(options: NotificationListenerOptions) {
    this.#options = options;
  }

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#options.connectionString });
    client.on('notification', (message) => this.#options.onNotification(message.payload ?? ''));
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('connection ended')));
    await client.connect();
    await client.query(`LISTEN ${this.#options.channel}`);
    this.#client = client;
    this.#attempt = 0;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    const client = this.#client;
    this.#client = undefined;
    client?.removeAllListeners();
    await client?.end().catch(() => undefined);
  }

  #lost(client: pg.Client, error: Error): void {
    if (this.#stopped || this.#client !== client) return;
    this.#client = undefined;
    client.removeAllListeners();
    client.on('error', () => undefined);
    client.end().catch(() => undefined);
    this.#options.onLost();
    this.#reconnect(error);
  }

  #reconnect(error: Error): void {
    const delay = RECONNECT_DELAYS_MS[Math.min(this.#attempt, RECONNECT_DELAYS_MS.length - 1)] as number;
    this.#attempt++;
    this.#options.logger.warn(`kq postgres: LISTEN ${this.#options.channel} connection lost (${error.message}); reconnecting in ${delay} ms`);
    this.#reconnectTimer = setTimeout(() => {
      if (this.#stopped) return;
      this.start().catch((next: unknown) => this.#reconnect(next instanceof Error ? next : new Error(String(next))));
    }, delay);
    this.#reconnectTimer.unref();
  }
}
