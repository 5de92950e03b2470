import { KqError, kombuSslFromQuery, resolveTlsOptions, sanitizeUrl, type TransportDescription } from '@kq/core';
import type { RedisOptions } from 'ioredis';
import type { ClusterNodeAddress, RedisTransportOptions } from './redis-options';

/** Where to connect, as ioredis options, plus what `describe()` reports. */
export interface RedisEndpoint {
  /** host/port/username/password/db/tls, or sentinels + name; for a cluster, what every node connection uses. */
  connection: RedisOptions;
  db: number;
  description: TransportDescription;
  /** Set for Redis Cluster (kq's cluster layout): the startup nodes. */
  cluster?: { nodes: ClusterNodeAddress[] };
}

const DEFAULT_PORT = 6379;
const DEFAULT_SENTINEL_PORT = 26379;

/**
 * Reads a Kombu broker URL: `redis://[user:pass@]host[:port][/db]`, `rediss://…` (TLS, set by Kombu's query
 * parameters `ssl_cert_reqs` (`none` disables certificate checks), `ssl_ca_certs`, `ssl_certfile`, `ssl_keyfile`), or `sentinel://[:pass@]host:port[/db][;sentinel://host2:port2…]` with
 * `masterName`. Without a URL, everything comes from `options.redisOptions` (e.g. sentinels given directly).
 */
export function parseBrokerUrl(url: string | undefined, options: RedisTransportOptions): RedisEndpoint {
  const endpoint = parseSingle(url, options);
  return options.cluster || isClusterUrl(url) ? toCluster(endpoint, url, options) : endpoint;
}

function parseSingle(url: string | undefined, options: RedisTransportOptions): RedisEndpoint {
  if (url === undefined || url === '') return fromOptions(options);
  if (isClusterUrl(url)) return parseClusterUrl(url, options);
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
    // As Kombu's sentinel channel: broker_use_ssl reaches the master (ioredis: enableTLSForSentinelMode), and the
    // sentinels themselves speak TLS only when told so separately (sentinel_kwargs' ssl_* there, sentinelTls here).
    const masterTls = options.tls !== undefined && options.tls !== false ? resolveTlsOptions(true, options.tls) : undefined;
    const sentinelTls = options.sentinelTls !== undefined && options.sentinelTls !== false ? resolveTlsOptions(true, options.sentinelTls) : undefined;
    return {
      connection: {
        sentinels,
        name: masterName,
        db,
        ...auth,
        ...(masterTls ? { tls: masterTls, enableTLSForSentinelMode: true } : {}),
        ...(sentinelTls ? { sentinelTLS: sentinelTls } : {}),
      },
      db,
      description: { transport: 'redis', hostname: head.host, port: head.port, virtualHost: String(db), userid: username ?? null, ssl: masterTls !== undefined },
    };
  }
  if (scheme !== 'redis' && scheme !== 'rediss') {
    throw new KqError(`The Redis transport cannot connect to ${scheme}:// URLs; use redis://, rediss://, sentinel:// or redis+cluster://.`);
  }
  const host = hostOf(first);
  const port = first.port ? Number(first.port) : DEFAULT_PORT;
  // rediss:// or a `tls` option (Celery's broker_use_ssl / redis_backend_use_ssl) turns TLS on, as in Kombu; the URL's
  // ssl_* parameters (Kombu's names) and then the option say how.
  const ssl = scheme === 'rediss' || (options.tls !== undefined && options.tls !== false);
  const connection: RedisOptions = { host, port, db, ...auth };
  if (ssl) connection.tls = resolveTlsOptions(true, scheme === 'rediss' ? kombuSslFromQuery(first.searchParams) : undefined, options.tls);
  return {
    connection,
    db,
    description: { transport: 'redis', hostname: host, port, virtualHost: String(db), userid: username ?? null, ssl },
  };
}

function isClusterUrl(url: string | undefined): boolean {
  return url !== undefined && /^rediss?\+cluster:\/\//i.test(url.trim());
}

/**
 * `redis+cluster://[user:pass@]host:port[,host:port…][/0]` (or `rediss+cluster://`, TLS; `;` between whole URLs works
 * too, as for Kombu's broker lists): startup nodes of a Redis Cluster, which shares its database 0 only.
 */
function parseClusterUrl(url: string, options: RedisTransportOptions): RedisEndpoint {
  const nodes: ClusterNodeAddress[] = [];
  let head: URL | undefined;
  for (const part of url.split(';').map((text) => text.trim()).filter((text) => text !== '')) {
    const match = /^(rediss?)\+cluster:\/\/(?:([^@/?#]*)@)?([^/?#]*)(.*)$/i.exec(part);
    if (!match) throw new KqError(`Cannot read the broker URL ${JSON.stringify(sanitizeUrl(url))}: expected redis+cluster://host:port,host:port/.`);
    const [, scheme = 'redis', auth, hosts = '', rest = ''] = match;
    for (const host of hosts.split(',').map((text) => text.trim()).filter((text) => text !== '')) {
      const parsed = parseUrl(`redis://${host}`);
      nodes.push({ host: hostOf(parsed), port: parsed.port ? Number(parsed.port) : DEFAULT_PORT });
    }
    head ??= parseUrl(`${scheme.toLowerCase()}://${auth ? `${auth}@` : ''}${nodes[0] ? `${nodes[0].host.includes(':') ? `[${nodes[0].host}]` : nodes[0].host}:${nodes[0].port}` : 'localhost'}${rest}`);
  }
  if (!head || nodes.length === 0) throw new KqError(`The broker URL ${JSON.stringify(sanitizeUrl(url))} names no cluster node; use redis+cluster://host:port,host:port/.`);
  const single = parseSingle(head.toString(), options);
  return { ...single, cluster: { nodes } };
}

/** The endpoint as a cluster's: its host the startup node unless `cluster.nodes` names them; database 0 only. */
function toCluster(endpoint: RedisEndpoint, url: string | undefined, options: RedisTransportOptions): RedisEndpoint {
  if (endpoint.connection.sentinels) {
    throw new KqError('Redis Cluster mode cannot go through Sentinel: give the cluster nodes, e.g. redis+cluster://host1:7000,host2:7001/.');
  }
  if (endpoint.db !== 0) {
    throw new KqError(
      `Redis Cluster has only database 0, but the broker URL or the db option names database ${endpoint.db}${url ? ` (${sanitizeUrl(url)})` : ''}; ` +
        'drop the database number, e.g. redis+cluster://host1:7000,host2:7001/.',
    );
  }
  const given = typeof options.cluster === 'object' ? options.cluster.nodes : undefined;
  const nodes = given ?? endpoint.cluster?.nodes ?? [{ host: endpoint.description.hostname, port: endpoint.description.port ?? DEFAULT_PORT }];
  if (nodes.length === 0) throw new KqError('The cluster option names no node; pass { cluster: { nodes: [{ host, port }] } } or a redis+cluster:// URL.');
  const { host: _host, port: _port, db: _db, ...shared } = endpoint.connection;
  const first = nodes[0] as ClusterNodeAddress;
  return {
    connection: shared,
    db: 0,
    description: { ...endpoint.description, hostname: first.host, port: first.port, virtualHost: '0' },
    cluster: { nodes: nodes.map((node) => ({ host: node.host, port: node.port })) },
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
  } catch {
    // Not chained: Node's URL error carries the whole input, password included, for anyone who prints the cause.
    throw new KqError(`Cannot read the broker URL ${JSON.stringify(sanitizeUrl(text))}: expected redis://host:port/db.`);
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
    throw new KqError(`The broker URL ${JSON.stringify(sanitizeUrl(url))} names database ${JSON.stringify(segment)}; use a number, e.g. redis://host:6379/0.`);
  }
  return db;
}

