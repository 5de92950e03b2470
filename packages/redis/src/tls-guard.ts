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
    const failure = tlsFailureOf(error, target);
    if (failure) return fail(failure);
    const code = (error as { code?: unknown } | null)?.code;
    if (usesTls(client) && handshaken && !everReady && typeof code === 'string' && RESET_CODES.has(code)) {
      fail(new TlsFailure(target, code, CLOSED_AFTER_HANDSHAKE, { cause: error }));
    }
  });
  // Sentinels are reached by connections ioredis makes itself; it reports their failures only as text.
  client.on('sentinelError', (error: unknown) => {
    const failure = sentinelTlsFailureOf(error);
    if (failure) fail(failure);
  });
  watchStreams(client, (stream) => {
    if (usesTls(client)) watchHandshake(stream, () => fail(new TlsFailure(target, 'ERR_TLS_HANDSHAKE_TIMEOUT', PLAINTEXT_PORT)));
  });
  return client;
}

/**
 * A Redis Cluster's TLS guard: each node connection ioredis makes is guarded as a single server's, and the first TLS
 * failure of any ends the cluster client (its slot refreshes would otherwise retry it for ever).
 */
export function guardClusterTls(cluster: Cluster, scheme: 'redis' | 'rediss'): Cluster {
  cluster.on('+node', (node: Redis) => {
    guardTls(node, `${scheme}://${node.options.host ?? 'localhost'}:${node.options.port ?? 6379}`, (failure) => {
      if (failures.has(cluster)) return;
      failures.set(cluster, failure);
      cluster.disconnect();
    });
  });
  return cluster;
}

/** The TLS failure that ended `client`'s connection (a `Redis` or a `Cluster`), if one did. */
export function tlsFailureFor(client: unknown): TlsFailure | undefined {
  return typeof client === 'object' && client !== null ? failures.get(client) : undefined;
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

/**
 * Node's messages for TLS failures, as ioredis passes them on for a sentinel: "failed to connect to sentinel
 * host:port because <message>" (the error's code is lost on the way).
 */
const SENTINEL_MESSAGES: ReadonlyArray<readonly [RegExp, string]> = [
  [/self[- ]signed certificate in certificate chain/i, 'SELF_SIGNED_CERT_IN_CHAIN'],
  [/self[- ]signed certificate/i, 'DEPTH_ZERO_SELF_SIGNED_CERT'],
  [/unable to verify the first certificate/i, 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'],
  [/unable to get local issuer certificate/i, 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY'],
  [/certificate has expired/i, 'CERT_HAS_EXPIRED'],
  [/Hostname\/IP does not match certificate's altnames/i, 'ERR_TLS_CERT_ALTNAME_INVALID'],
  [/wrong version number/i, 'ERR_SSL_WRONG_VERSION_NUMBER'],
  [/alert unknown ca/i, 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA'],
  [/alert certificate required/i, 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'],
];

function sentinelTlsFailureOf(error: unknown): TlsFailure | undefined {
  const text = error instanceof Error ? error.message : '';
  const match = /failed to connect to sentinel (\S+) because (.*)$/s.exec(text);
  if (!match) return undefined;
  const [, address = '', reason = ''] = match;
  const code = SENTINEL_MESSAGES.find(([pattern]) => pattern.test(reason))?.[1];
  if (code === undefined) return undefined;
  const failure = tlsFailureOf(Object.assign(new Error(reason), { code }), `rediss://${address} (sentinel)`);
  if (!failure || code !== 'ERR_TLS_CERT_ALTNAME_INVALID') return failure;
  // The altname message names host and certificate in Node's words; the typed error only has them as fields.
  return new TlsFailure(`rediss://${address} (sentinel)`, code, `${reason.replace(/\s+/g, ' ').trim()}; connect by a name the certificate lists`, { cause: error });
}
