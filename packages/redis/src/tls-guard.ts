import { createConnection, type Socket } from 'node:net';
import { TlsFailure, tlsFailureOf } from '@kq/core';
import type { Cluster, Redis } from 'ioredis';

const failures = new WeakMap<object, TlsFailure>();

/**
 * How long a TLS handshake may stall after the TCP connect before kq looks whether the port speaks plain Redis. A
 * handshake takes milliseconds; a plaintext Redis given a ClientHello waits for the end of an inline command that
 * never comes, until ioredis's connectTimeout (10 s) and then for ever as an outage.
 */
export const HANDSHAKE_STALL_MS = 1000;

const PLAINTEXT_PORT =
  "the server did not answer the TLS handshake, and answers plain Redis on that port: it is not a TLS port; use the server's " +
  'TLS port (tls-port), or a redis:// URL without TLS options if the server has none';
const CLOSED_AFTER_HANDSHAKE =
  'the server closed the connection right after the TLS handshake, before answering anything: it requires a client ' +
  "certificate (mutual TLS) and refused this client's, or got none; set ssl_certfile and ssl_keyfile (certFile, keyFile) " +
  'to a certificate signed by a CA the server trusts (tls-ca-cert-file)';

/** Socket errors that end a connection the server reset or closed under a write. */
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE']);

/**
 * Ends `client`'s reconnect loop at its first TLS failure (an untrusted, expired or misnamed certificate, a refused
 * client certificate, a server not speaking TLS): ioredis would retry for ever, and each retry fails the same way.
 * The failure is kept for `tlsFailureFor`, so whoever awaited the connection can say why in one line; `onFailure`
 * hears it too (a cluster ends with its node).
 *
 * Two failures carry no TLS error code, and are recognised here:
 * - a plaintext port: the handshake stalls. After `HANDSHAKE_STALL_MS` a second, plain connection sends `PING`; a
 *   Redis reply there names the cause. No reply (a busy or unreachable server) changes nothing: an outage, retried.
 * - a refused client certificate over TLS 1.3: the server's refusal arrives after the client's handshake is done, and
 *   the client often sees only a reset. A reset right after the handshake of a client that has never been ready
 *   (so not a server restarting under a running fleet) is named as that refusal.
 */
export function guardTls(client: Redis, target: string, onFailure?: (failure: TlsFailure) => void): Redis {
  // Through Sentinel, the server is the master the sentinels named, known once connected to.
  let peer: string | undefined;
  const where = (): string => (client.options.sentinels && peer ? `${usesTls(client) ? 'rediss' : 'redis'}://${peer}` : target);
  const fail = (failure: TlsFailure): void => {
    if (failures.has(client)) return;
    failures.set(client, failure);
    client.disconnect();
    onFailure?.(failure);
  };
  let everReady = false;
  let handshaken = false;
  client.on('ready', () => (everReady = true));
  // ioredis's 'connect' comes after the TLS handshake (secureConnect) on a TLS connection.
  client.on('connect', () => (handshaken = true));
  client.on('close', () => (handshaken = false));
  client.on('error', (error: unknown) => {
    const failure = tlsFailureOf(error, where());
    if (failure) return fail(failure);
    const code = (error as { code?: unknown } | null)?.code;
    if (usesTls(client) && handshaken && !everReady && typeof code === 'string' && RESET_CODES.has(code)) {
      fail(new TlsFailure(where(), code, CLOSED_AFTER_HANDSHAKE, { cause: error }));
    }
  });
  // Once failed, every command fails with the TLS failure itself rather than ioredis's "Connection is closed": the
  // caller of a command on a connection that ended at a reconnect (a certificate rotated to a bad one under a running
  // worker) learns the cause, a TlsFailure, which is not retried like an outage.
  // (The class's sendCommand is looked up on each call, so whatever wraps it there still sees every command.)
  const prototype = Object.getPrototypeOf(client) as Redis;
  client.sendCommand = (command, stream) => {
    const failure = failures.get(client);
    if (!failure) return prototype.sendCommand.call(client, command, stream);
    command.reject(failure);
    return command.promise;
  };
  guardSentinels(client, fail);
  watchStreams(client, (stream) => {
    if (client.options.sentinels) stream.once('connect', () => (peer = `${stream.remoteAddress ?? '?'}:${stream.remotePort ?? '?'}`));
    if (usesTls(client)) watchHandshake(stream, () => fail(new TlsFailure(where(), 'ERR_TLS_HANDSHAKE_TIMEOUT', PLAINTEXT_PORT)));
  });
  return client;
}

/**
 * A Redis Cluster's TLS guard: each node connection ioredis makes, and the duplicates it asks for the slots through,
 * is guarded as a single server's, and the first TLS failure of any ends the cluster client (its slot refreshes would
 * otherwise retry for ever). A failure reported as `ClusterAllFailedError` with a `lastNodeError` is named after the
 * startup nodes, `nodes`.
 */
export function guardClusterTls(cluster: Cluster, scheme: 'redis' | 'rediss', nodes: readonly { host: string; port: number }[]): Cluster {
  const fail = (failure: TlsFailure): void => {
    if (failures.has(cluster)) return;
    failures.set(cluster, failure);
    cluster.disconnect();
  };
  const startup = `${scheme}+cluster://${nodes.map((node) => `${node.host}:${node.port}`).join(',')}`;
  cluster.on('error', (error: unknown) => {
    const cause = (error as { lastNodeError?: unknown } | null)?.lastNodeError ?? error;
    const failure = tlsFailureOf(cause, startup);
    if (failure) fail(failure);
  });
  cluster.on('+node', (node: Redis) => {
    const target = `${scheme}://${node.options.host ?? 'localhost'}:${node.options.port ?? 6379}`;
    guardTls(node, target, fail);
    // The slot query runs on a duplicate of the node's connection (ioredis's refreshSlotsCache), whose error the
    // cluster hears only as "Connection is closed": guarded too, so a TLS failure there is seen with its code.
    const duplicate = node.duplicate.bind(node);
    node.duplicate = (...args: Parameters<Redis['duplicate']>) => guardTls(duplicate(...args), target, fail);
  });
  return cluster;
}

/** The TLS failure that ended `client`'s connection (a `Redis` or a `Cluster`), if one did. */
export function tlsFailureFor(client: unknown): TlsFailure | undefined {
  return typeof client === 'object' && client !== null ? failures.get(client) : undefined;
}

/**
 * ioredis asks each sentinel through a connection of its own, made by its SentinelConnector's `connectToSentinel`,
 * whose errors it drops (the client only hears "All sentinels are unreachable … Connection is closed", retried for
 * ever). Wrapped here, a TLS failure of a sentinel is seen with its code and ends the client.
 */
function guardSentinels(client: Redis, fail: (failure: TlsFailure) => void): void {
  const connector = (client as unknown as { connector?: SentinelConnectorInternals }).connector;
  if (!client.options.sentinels || typeof connector?.connectToSentinel !== 'function') return;
  const connect = connector.connectToSentinel.bind(connector);
  connector.connectToSentinel = (endpoint, options) => {
    const sentinel = connect(endpoint, options);
    const target = `${client.options.sentinelTLS ? 'rediss' : 'redis'}://${endpoint.host}:${endpoint.port ?? 26379} (sentinel)`;
    sentinel.on('error', (error: unknown) => {
      const failure = tlsFailureOf(error, target);
      if (failure) fail(failure);
    });
    return sentinel;
  };
}

interface SentinelConnectorInternals {
  connectToSentinel?: (endpoint: { host: string; port?: number }, options?: unknown) => Redis;
}

function usesTls(client: Redis): boolean {
  const { tls, sentinels, enableTLSForSentinelMode } = client.options;
  // With sentinels, `tls` reaches the master only when enableTLSForSentinelMode says so (as ioredis decides).
  return tls !== undefined && (!sentinels || enableTLSForSentinelMode === true);
}

/** Calls `watch` with every socket ioredis opens for `client` (it assigns each to `client.stream`). */
function watchStreams(client: Redis, watch: (stream: Socket) => void): void {
  let current: unknown = (client as { stream?: unknown }).stream;
  Object.defineProperty(client, 'stream', {
    configurable: true,
    enumerable: true,
    get: () => current,
    set: (stream: unknown) => {
      current = stream;
      if (stream && typeof (stream as Socket).once === 'function') watch(stream as Socket);
    },
  });
}

/** After the TCP connect, a handshake that stalls `HANDSHAKE_STALL_MS` sends a plain PING; `plaintext` if Redis answers it. */
function watchHandshake(stream: Socket, plaintext: () => void): void {
  let timer: NodeJS.Timeout | undefined;
  let secured = false;
  const stop = (): void => {
    secured = true;
    clearTimeout(timer);
  };
  const start = (): void => {
    timer = setTimeout(() => {
      const { remoteAddress, remotePort } = stream;
      if (stream.destroyed || remoteAddress === undefined || remotePort === undefined) return;
      void answersPlainRedis(remoteAddress, remotePort).then((answers) => {
        if (answers && !secured) plaintext();
      });
    }, HANDSHAKE_STALL_MS);
    timer.unref();
  };
  if (stream.connecting) stream.once('connect', start);
  else start();
  stream.once('secureConnect', stop);
  stream.once('close', stop);
}

/** True when `host:port` answers a plain `PING` with a RESP reply (`+PONG`, `-NOAUTH …`), within `HANDSHAKE_STALL_MS`. */
function answersPlainRedis(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (answer: boolean): void => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(HANDSHAKE_STALL_MS, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data: Buffer) => done(data[0] === 0x2b || data[0] === 0x2d)); // '+' or '-'
  });
}
