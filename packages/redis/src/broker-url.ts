import { KqError, type TransportDescription } from '@kq/core';
import type { RedisOptions } from 'ioredis';
import type { RedisTransportOptions } from './redis-options';

/** Where to connect, as ioredis options, plus what `describe()` reports. */
export interface RedisEndpoint {
  /** host/port/username/password/db/tls, or sentinels + name. */
  connection: RedisOptions;
  db: number;
  description: TransportDescription;
}

const DEFAULT_PORT = 6379;
const DEFAULT_SENTINEL_PORT = 26379;

/**
 * Reads a Kombu broker URL: `redis://[user:pass@]host[:port][/db]`, `rediss://…` (TLS; `?ssl_cert_reqs=none`
 * disables certificate checks as in Kombu), or `sentinel://[:pass@]host:port[/db][;sentinel://host2:port2…]` with
 * `masterName`. Without a URL, everything comes from `options.redisOptions` (e.g. sentinels given directly).
 */
export function parseBrokerUrl(url: string | undefined, options: RedisTransportOptions): RedisEndpoint {
  if (url === undefined || url === '') return fromOptions(options);
  const parts = url.split(';').map((part) => part.trim()).filter((part) => part !== '');
  const first = parseUrl(parts[0] ?? url);
  const scheme = first.protocol.replace(/:$/, '').toLowerCase();
  const db = options.db ?? dbFromPath(first.pathname, url);
  const username = decodeURIComponent(first.username) || undefined;
  const password = decodeURIComponent(first.password) || undefined;
  const auth: RedisOptions = { ...(username ? { username } : {}), ...(password ? { password } : {}) };

  if (scheme === 'sentinel') {
    const masterName = options.masterName ?? (options.redisOptions?.name as string | undefined);
    if (!masterName) {
      throw new KqError(
        `A sentinel:// broker URL needs the name of the master to ask the sentinels for: pass { masterName: 'mymaster' } ` +
          `(Kombu's transport option master_name).`,
      );
    }
    const sentinels = parts.map((part) => {
      const parsed = parseUrl(part);
      return { host: hostOf(parsed), port: parsed.port ? Number(parsed.port) : DEFAULT_SENTINEL_PORT };
    });
    const head = sentinels[0] as { host: string; port: number };
    return {
      connection: { sentinels, name: masterName, db, ...auth },
      db,
      description: { transport: 'redis', hostname: head.host, port: head.port, virtualHost: String(db), userid: username ?? null, ssl: false },
    };
  }
  if (scheme !== 'redis' && scheme !== 'rediss') {
    throw new KqError(`The Redis transport cannot connect to ${scheme}:// URLs; use redis://, rediss:// or sentinel://.`);
  }
  const host = hostOf(first);
  const port = first.port ? Number(first.port) : DEFAULT_PORT;
  const ssl = scheme === 'rediss';
  const connection: RedisOptions = { host, port, db, ...auth };
  if (ssl) {
    const certReqs = (first.searchParams.get('ssl_cert_reqs') ?? '').toLowerCase();
    connection.tls = certReqs === 'none' || certReqs === 'cert_none' ? { rejectUnauthorized: false } : {};
  }
  return {
    connection,
    db,
    description: { transport: 'redis', hostname: host, port, virtualHost: String(db), userid: username ?? null, ssl },
  };
}

function fromOptions(options: RedisTransportOptions): RedisEndpoint {
  const given = options.redisOptions ?? {};
  const db = options.db ?? given.db ?? 0;
  const sentinel = given.sentinels?.[0];
  const host = sentinel?.host ?? given.host ?? 'localhost';
  const port = sentinel?.port ?? given.port ?? DEFAULT_PORT;
  return {
    connection: { db, ...(options.masterName ? { name: options.masterName } : {}) },
    db,
    description: {
      transport: 'redis',
      hostname: host,
      port,
      virtualHost: String(db),
      userid: given.username ?? null,
      ssl: given.tls !== undefined,
    },
  };
}

function parseUrl(text: string): URL {
  try {
    return new URL(text);
  } catch (error) {
    throw new KqError(`Cannot read the broker URL ${JSON.stringify(redact(text))}: expected redis://host:port/db.`, { cause: error });
  }
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '') || 'localhost';
}

function dbFromPath(path: string, url: string): number {
  const segment = path.replace(/^\/+/, '').split('/')[0] ?? '';
  if (segment === '') return 0;
  const db = Number(segment);
  if (!Number.isInteger(db) || db < 0) {
    throw new KqError(`The broker URL ${JSON.stringify(redact(url))} names database ${JSON.stringify(segment)}; use a number, e.g. redis://host:6379/0.`);
  }
  return db;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/g, '//$1:***@');
}
