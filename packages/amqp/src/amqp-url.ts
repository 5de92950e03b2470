import { KqError, sanitizeUrl } from '@kq/core';

/** A broker URL taken apart the way Kombu reads `amqp://user:password@host:port/vhost?heartbeat=10`. */
export interface AmqpUrl {
  protocol: 'amqp' | 'amqps';
  hostname: string;
  port: number;
  username: string;
  password: string;
  /** `/` when the path is empty or `/` (Kombu's `amqp://host//` also means `/`); otherwise the decoded path. */
  vhost: string;
  /** `heartbeat`, in seconds, from the query string. */
  heartbeat?: number;
  frameMax?: number;
  channelMax?: number;
}

const DEFAULT_PORTS = { amqp: 5672, amqps: 5671 } as const;

/** Parses an `amqp://` or `amqps://` URL; missing user and password default to `guest`, as in Kombu and amqplib. */
export function parseAmqpUrl(url: string): AmqpUrl {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not chained: Node's URL error carries the whole input, password included, for anyone who prints the cause.
    throw new KqError(`${JSON.stringify(sanitizeUrl(url))} is not a valid broker URL; expected amqp://user:password@host:port/vhost.`);
  }
  const scheme = parsed.protocol.replace(/:$/, '').toLowerCase();
  if (scheme !== 'amqp' && scheme !== 'amqps') {
    throw new KqError(`The AMQP transport handles amqp:// and amqps:// URLs, not ${scheme}://.`);
  }
  const hostname = parsed.hostname.replace(/^\[|\]$/g, '') || 'localhost';
  const path = parsed.pathname.startsWith('/') ? parsed.pathname.slice(1) : parsed.pathname;
  const result: AmqpUrl = {
    protocol: scheme,
    hostname,
    port: parsed.port ? Number(parsed.port) : DEFAULT_PORTS[scheme],
    username: parsed.username === '' && parsed.password === '' ? 'guest' : decodeURIComponent(parsed.username),
    password: parsed.username === '' && parsed.password === '' ? 'guest' : decodeURIComponent(parsed.password),
    vhost: path === '' ? '/' : decodeURIComponent(path),
  };
  const query = parsed.searchParams;
  const heartbeat = numberParam(query, 'heartbeat');
  if (heartbeat !== undefined) result.heartbeat = heartbeat;
  const frameMax = numberParam(query, 'frame_max') ?? numberParam(query, 'frameMax');
  if (frameMax !== undefined) result.frameMax = frameMax;
  const channelMax = numberParam(query, 'channel_max') ?? numberParam(query, 'channelMax');
  if (channelMax !== undefined) result.channelMax = channelMax;
  return result;
}

function numberParam(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    throw new KqError(`The broker URL parameter ${name}=${JSON.stringify(raw)} must be a non-negative number.`);
  }
  return value;
}

