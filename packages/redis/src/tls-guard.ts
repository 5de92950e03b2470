import { tlsFailureOf, type TlsFailure } from '@kq/core';
import type { Redis } from 'ioredis';

const failures = new WeakMap<Redis, TlsFailure>();

/**
 * Ends `client`'s reconnect loop at its first TLS failure (an untrusted, expired or misnamed certificate, a refused
 * client certificate, a server not speaking TLS): ioredis would retry for ever, and each retry fails the same way.
 * The failure is kept for `tlsFailureFor`, so whoever awaited the connection can say why in one line.
 */
export function guardTls(client: Redis, target: string): Redis {
  client.on('error', (error: unknown) => {
    const failure = tlsFailureOf(error, target);
    if (!failure || failures.has(client)) return;
    failures.set(client, failure);
    client.disconnect();
  });
  return client;
}

/** The TLS failure that ended `client`'s connection, if one did. */
export function tlsFailureFor(client: unknown): TlsFailure | undefined {
  return failures.get(client as Redis);
}
