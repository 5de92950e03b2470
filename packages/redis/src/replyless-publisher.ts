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
 * reconnecting, closed) it is not, and the caller publishes the replied way, as it does for good once the server
 * shows it has no `CLIENT REPLY` (a proxy, an old or restricted server).
 */
export class ReplylessPublisher {
  readonly #create: () => Redis;
  #client: Redis | undefined;
  /** True once `CLIENT REPLY OFF` went out on the current connection, until it closes. */
  #armed = false;
  /** What the connection had read when it was armed: anything more means the server answers after all. */
  #readWhenArmed = 0;
  /** The server has no `CLIENT REPLY` (or answered anyway): every publish goes the replied way. */
  #unsupported = false;

  constructor(create: () => Redis) {
    this.#create = create;
  }

  /** Writes `PUBLISH channel payload` if the connection is ready; false if not (the first call starts connecting). */
  publish(channel: string, payload: string): boolean {
    if (this.#unsupported) return false;
    const client = this.#client ?? this.#open();
    const stream = client.stream;
    if (!this.#armed || client.status !== 'ready' || !stream.writable || stream.writableLength > MAX_UNSENT_BYTES) return false;
    if (stream.bytesRead !== this.#readWhenArmed) return this.#giveUp();
    stream.write(`*3\r\n$7\r\nPUBLISH\r\n$${Buffer.byteLength(channel)}\r\n${channel}\r\n$${Buffer.byteLength(payload)}\r\n${payload}\r\n`);
    return true;
  }

  /** Closes the connection; what was written is still sent. */
  close(): void {
    const client = this.#client;
    this.#client = undefined;
    this.#armed = false;
    // Not QUIT, whose reply would never come: ioredis ends the socket, after what was written to it.
    client?.disconnect();
  }

  #giveUp(): false {
    this.#unsupported = true;
    this.close();
    return false;
  }

  #open(): Redis {
    const client = this.#create();
    this.#client = client;
    client.on('ready', () => {
      // Asked first the answered way (`ON` replies OK), so a server or proxy without the command is found out here.
      client.call('CLIENT', 'REPLY', 'ON').then(
        () => {
          if (client !== this.#client || client.status !== 'ready') return;
          client.stream.write(REPLY_OFF);
          this.#readWhenArmed = client.stream.bytesRead;
          this.#armed = true;
        },
        (error: unknown) => {
          // The server refused it; a connection lost meanwhile is only tried again on the next one.
          if (error instanceof Error && error.name === 'ReplyError') this.#giveUp();
        },
      );
    });
    client.on('close', () => {
      this.#armed = false;
    });
    client.connect().catch(() => undefined); // its 'error' events go to the factory's handler; publishes fall back meanwhile
    return client;
  }
}
