import type { Redis } from 'ioredis';

/** Past this much unsent on the socket, publishes go the replied way (which ioredis bounds) instead of piling up here. */
const MAX_UNSENT_BYTES = 1 << 20;

/** `CLIENT REPLY OFF` in RESP: sent first on every connection this publisher makes. */
const REPLY_OFF = '*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n';

/**
 * A connection that publishes and is never answered. Redis's cost for an idle fleet is its heartbeats (one `PUBLISH`
 * a worker every 2 s), and of a heartbeat's socket writes on the broker, one is the reply to its publisher, which also
 * wakes the worker to read it: with `CLIENT REPLY OFF` the broker writes only to the subscribers. ioredis keeps the
 * connection (TLS, AUTH, SELECT, Sentinel, reconnects); once it is ready the commands are written straight to its
 * socket, since ioredis would wait for replies that never come. Hand-written RESP: two fixed commands on a hot path.
 *
 * Fire and forget: `publish` says whether the message was written; when the connection is not ready (connecting,
 * reconnecting, closed) it is not, and the caller publishes the replied way.
 */
export class ReplylessPublisher {
  readonly #create: () => Redis;
  #client: Redis | undefined;
  /** True once `CLIENT REPLY OFF` went out on the current connection, until it closes. */
  #armed = false;

  constructor(create: () => Redis) {
    this.#create = create;
  }

  /** Writes `PUBLISH channel payload` if the connection is ready; false if not (the first call starts connecting). */
  publish(channel: string, payload: string): boolean {
    const client = this.#client ?? this.#open();
    const stream = client.stream;
    if (!this.#armed || client.status !== 'ready' || !stream.writable || stream.writableLength > MAX_UNSENT_BYTES) return false;
    stream.write(`*3\r\n$7\r\nPUBLISH\r\n$${Buffer.byteLength(channel)}\r\n${channel}\r\n$${Buffer.byteLength(payload)}\r\n${payload}\r\n`);
    return true;
  }

  /** Closes the connection (publishes already written are sent first: QUIT follows them on the socket). */
  close(): void {
    const client = this.#client;
    this.#client = undefined;
    this.#armed = false;
    // Not QUIT, whose reply would never come either: ioredis ends the socket, after what was written to it.
    client?.disconnect();
  }

  #open(): Redis {
    const client = this.#create();
    this.#client = client;
    client.on('ready', () => {
      client.stream.write(REPLY_OFF);
      this.#armed = true;
    });
    client.on('close', () => {
      this.#armed = false;
    });
    client.connect().catch(() => undefined); // its 'error' events go to the factory's handler; publishes fall back meanwhile
    return client;
  }
}
