import type { Redis, RedisOptions } from 'ioredis';
import { permissionDeniedOf } from './connection-errors';

/** How long an aborted BRPOP may take to return after CLIENT UNBLOCK before its connection is dropped instead. */
const ABORT_GRACE_MS = 250;

/** Makes the pool's connections, all to the server the pool serves (`ConnectionFactory` is one). */
export interface BlockingConnector {
  create(role: string, overrides: RedisOptions): Redis;
}

/** What the store waits for messages with: a `BlockingPool`, or in cluster mode one per node (`ClusterBlockingPool`). */
export interface BlockingWaiter {
  readonly size: number;
  brpop(keys: readonly string[], timeoutMs: number, signal: AbortSignal | undefined): Promise<[string, string] | null>;
  close(): Promise<void>;
  terminate(): void;
}

interface BlockingConnection {
  readonly client: Redis;
  /** Server-side client id (for CLIENT UNBLOCK); unknown until asked, and again after a reconnect. */
  id: number | undefined;
}

/**
 * Connections that only ever run BRPOP. A blocked connection can do nothing else, so every concurrent claimer (one
 * per consumer) takes its own from the pool. A wait is aborted with CLIENT UNBLOCK from the command connection, so
 * cancelling a consumer does not wait out the poll interval.
 */
export class BlockingPool implements BlockingWaiter {
  readonly #factory: BlockingConnector;
  /** A connection to the same server that is free to send CLIENT UNBLOCK. */
  readonly #commands: Redis;
  readonly #idle: BlockingConnection[] = [];
  readonly #all = new Set<BlockingConnection>();
  #created = 0;
  #closed = false;

  constructor(factory: BlockingConnector, commands: Redis) {
    this.#factory = factory;
    this.#commands = commands;
  }

  /** Connections currently open (busy or idle). */
  get size(): number {
    return this.#all.size;
  }

  /**
   * BRPOP over `keys` for up to `timeoutMs`: the popped `[key, value]`, or null on timeout or abort. A message popped
   * while the abort was under way is still returned: the caller owns it.
   */
  async brpop(keys: readonly string[], timeoutMs: number, signal: AbortSignal | undefined): Promise<[string, string] | null> {
    if (this.#closed || signal?.aborted) return null;
    const connection = this.#acquire();
    let dropped = false;
    let grace: NodeJS.Timeout | undefined;
    // Settles the wait once its connection is dropped: ioredis does not fail a command still queued for a connection
    // that is reconnecting when it is disconnected (the broker is down), so the wait would never end (nor a shutdown).
    let abandon: (value: null) => void = () => undefined;
    const abandoned = new Promise<null>((resolve) => (abandon = resolve));
    const onAbort = (): void => {
      void this.#unblock(connection);
      grace = setTimeout(() => {
        // Still blocked (offline, or the id was unknown): closing the socket ends the wait on the server too.
        dropped = true;
        this.#drop(connection);
        abandon(null);
      }, ABORT_GRACE_MS);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (connection.id === undefined) {
        const id = await Promise.race([connection.client.client('ID'), abandoned]);
        if (id === null) return null;
        connection.id = Number(id);
      }
      if (signal?.aborted) return null;
      // What was queued but never sent is never served: the dropped connection does not reconnect.
      const reply = await Promise.race([connection.client.brpop(...keys, Math.max(timeoutMs, 1) / 1000), abandoned]);
      return reply ? [reply[0], reply[1]] : null;
    } catch (error) {
      if (dropped || signal?.aborted || this.#closed) return null;
      throw permissionDeniedOf(error) ?? error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (grace) clearTimeout(grace);
      if (!dropped) this.#release(connection);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#all];
    this.#all.clear();
    this.#idle.length = 0;
    for (const connection of all) connection.client.disconnect();
  }

  /** Drops every connection without waiting (a crash, for tests). */
  terminate(): void {
    void this.close();
  }

  #acquire(): BlockingConnection {
    const idle = this.#idle.pop();
    if (idle) return idle;
    const client = this.#factory.create(`block-${++this.#created}`, {
      // Wait through reconnects instead of failing the claim; a BRPOP that was never served is safe to resend.
      maxRetriesPerRequest: null,
      enableAutoPipelining: false,
    });
    const connection: BlockingConnection = { client, id: undefined };
    client.on('close', () => {
      connection.id = undefined;
    });
    this.#all.add(connection);
    void client.connect().catch(() => undefined);
    return connection;
  }

  #release(connection: BlockingConnection): void {
    if (this.#closed || !this.#all.has(connection)) return;
    this.#idle.push(connection);
  }

  #drop(connection: BlockingConnection): void {
    this.#all.delete(connection);
    const index = this.#idle.indexOf(connection);
    if (index >= 0) this.#idle.splice(index, 1);
    connection.client.disconnect();
  }

  async #unblock(connection: BlockingConnection): Promise<void> {
    if (connection.id === undefined) return;
    try {
      await this.#commands.client('UNBLOCK', connection.id);
    } catch {
      // The grace timer drops the connection instead.
    }
  }
}
