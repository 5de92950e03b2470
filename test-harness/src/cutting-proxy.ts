import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** How a cut treats the reply to the request that armed it. */
export type CutMode =
  /** Nothing of the reply reaches the client: the request ran on the server, the client never hears of it. */
  | 'whole-reply'
  /** The reply's first RESP value reaches the client, then the connection drops (a Redis pipeline half answered). */
  | 'after-first-reply'
  /** No cut: the reply is held back for `holdMs` (a slow answer), with whatever the connection gets meanwhile. */
  | 'hold-reply';

/**
 * A TCP proxy in front of a broker (a stand-in for a node, or for the network). Unarmed, every byte passes unchanged;
 * `close()` shuts it and every connection through it. Once armed, it drops the connection on which a request
 * matching a pattern was sent, right after the broker has run it and before (all of) its reply gets back: the one
 * moment a client cannot tell whether its commands ran. The client's reconnect goes through the proxy again.
 */
export class CuttingProxy {
  readonly #server: Server;
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #armed: { pattern: RegExp; mode: CutMode; holdMs: number } | undefined;
  /** How many cuts were made (held replies included). */
  cuts = 0;
  /** When the last held reply was let through (performance.now()). */
  releasedAt = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
    this.#server = createServer((client) => this.#pair(client));
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return (this.#server.address() as { port: number }).port;
  }

  /** The next request whose bytes match `pattern` is cut as `mode` says (once). */
  arm(pattern: RegExp, mode: CutMode, holdMs = 0): void {
    this.#armed = { pattern, mode, holdMs };
  }

  get armed(): boolean {
    return this.#armed !== undefined;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #pair(client: Socket): void {
    const server = createConnection(this.#target);
    this.#sockets.add(client).add(server);
    let cutting: CutMode | undefined;
    let holdMs = 0;
    let held: Buffer[] | undefined;
    const drop = (): void => {
      client.destroy();
      server.destroy();
    };
    client.on('data', (chunk) => {
      const armed = this.#armed;
      if (armed && armed.pattern.test(chunk.toString('latin1'))) {
        this.#armed = undefined;
        cutting = armed.mode;
        holdMs = armed.holdMs;
      }
      server.write(chunk);
    });
    server.on('data', (chunk) => {
      if (held) {
        held.push(chunk);
        return;
      }
      if (cutting === undefined) {
        client.write(chunk);
        return;
      }
      this.cuts++;
      if (cutting === 'hold-reply') {
        cutting = undefined;
        const chunks = [chunk];
        held = chunks;
        setTimeout(() => {
          held = undefined;
          this.releasedAt = performance.now();
          for (const each of chunks) client.write(each);
        }, holdMs);
        return;
      }
      if (cutting === 'after-first-reply') client.write(chunk.subarray(0, firstValueLength(chunk)));
      cutting = undefined;
      // Let what was written reach the client before the connection goes.
      setImmediate(drop);
    });
    client.on('close', drop).on('error', drop);
    server.on('close', drop).on('error', drop);
    client.on('close', () => this.#sockets.delete(client));
    server.on('close', () => this.#sockets.delete(server));
  }
}

/** The length in bytes of the first complete RESP value in `data` (the whole buffer if it holds less). */
function firstValueLength(data: Buffer): number {
  const end = skipValue(data, 0);
  return end ?? data.length;
}

function skipValue(data: Buffer, at: number): number | undefined {
  const lineEnd = data.indexOf('\r\n', at, 'latin1');
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(data[at] as number);
  const header = data.toString('latin1', at + 1, lineEnd);
  let next = lineEnd + 2;
  if (type === '$') return Number(header) < 0 ? next : next + Number(header) + 2;
  if (type === '*') {
    for (let n = 0; n < Number(header); n++) {
      const after = skipValue(data, next);
      if (after === undefined) return undefined;
      next = after;
    }
  }
  return next;
}
