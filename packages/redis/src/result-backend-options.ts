// The Redis result backend's options, and Celery's names for them translated to kq's.
import { KqError, type TlsOption } from '@kq/core';
import type { RedisOptions } from 'ioredis';
import { sentinelSslOf } from './redis-options';

/** Options of the Redis result backend. Celery's names (`global_keyprefix`, ...) are accepted by `createResultBackend`. */
export interface RedisResultBackendOptions {
  /**
   * Celery's `result_backend_transport_options.global_keyprefix`: prepended to every key and channel. As in Celery
   * (≥ 5.3.1), a `_` is added unless the prefix already ends in one of `:_-.`: `myapp` ⇒ `myapp_celery-task-meta-<id>`,
   * `myapp:` ⇒ `myapp:celery-task-meta-<id>`. Must match the Python side. Default: none.
   */
  keyPrefix?: string;
  /** Celery's `result_expires` (ms): results are kept this long. 0 = forever (plain SET). Default 1 day. */
  resultExpiresMs?: number;
  /** Database number; overrides the URL path. */
  db?: number;
  /** Sentinel: the monitored master's name (Celery's transport option `master_name`). Required for `sentinel://`. */
  masterName?: string;
  /**
   * TLS by kq's names or Kombu's (Celery's `redis_backend_use_ssl`; `ssl` is accepted as this option's name too); given,
   * it turns TLS on for a `redis://` URL as well. See the transport's `tls` option.
   */
  tls?: TlsOption;
  /** Sentinel: TLS to the sentinels themselves (see the transport's `sentinelTls`). */
  sentinelTls?: TlsOption;
  /** Passed to both ioredis connections (TLS, timeouts, retryStrategy...); kq's own settings win. */
  redisOptions?: RedisOptions;
  /** Prefix of the CLIENT SETNAME of the backend's connections: `<prefix>.results.<id>.cmd` / `.sub`. Default `kq`. */
  connectionName?: string;
  /**
   * Most subscriptions kept for tasks that were sent (`onTaskCall`) but that nobody waits for yet. Beyond it the
   * oldest are dropped, which is safe: a later `waitFor` subscribes again and reads the key. Also the most ready
   * results kept that such a subscription received before anyone waited (the first `waitFor` takes one). Default 10 000.
   */
  maxEarlySubscriptions?: number;
  /** Celery's `result_chord_ordered` (a transport option): chord parts in a sorted set, in group order. Default true. */
  chordOrdered?: boolean;
  /** Where undecodable pushed results and connection errors are reported. Default: nowhere (operations still fail). */
  logger?: { warn(message: string): void };
}

/**
 * kq option names pass through; Celery's are translated: `global_keyprefix` (also inside
 * `result_backend_transport_options`), `master_name`, `result_expires` (seconds).
 */
export function normaliseResultBackendOptions(options: Record<string, unknown>): RedisResultBackendOptions {
  const transport = isRecord(options['result_backend_transport_options']) ? options['result_backend_transport_options'] : {};
  const pick = (...values: unknown[]): unknown => values.find((value) => value !== undefined && value !== null);
  const result: RedisResultBackendOptions = {};
  const keyPrefix = pick(options['keyPrefix'], options['global_keyprefix'], transport['global_keyprefix']);
  if (keyPrefix !== undefined) result.keyPrefix = expect('keyPrefix', keyPrefix, 'string');
  const expiresSeconds = options['result_expires'];
  const expiresMs = pick(options['resultExpiresMs'], typeof expiresSeconds === 'number' ? expiresSeconds * 1000 : undefined);
  if (expiresMs !== undefined) result.resultExpiresMs = expect('resultExpiresMs', expiresMs, 'number');
  const db = options['db'];
  if (db !== undefined) result.db = expect('db', db, 'number');
  const masterName = pick(options['masterName'], options['master_name'], transport['master_name']);
  if (masterName !== undefined) result.masterName = expect('masterName', masterName, 'string');
  if (isRecord(options['redisOptions'])) result.redisOptions = options['redisOptions'] as RedisOptions;
  const tls = pick(options['tls'], options['ssl'], options['redis_backend_use_ssl']);
  if (tls !== undefined) result.tls = tls as TlsOption;
  const sentinelTls = pick(options['sentinelTls'], isRecord(transport['sentinel_kwargs']) ? sentinelSslOf(transport['sentinel_kwargs']) : undefined);
  if (sentinelTls !== undefined) result.sentinelTls = sentinelTls as TlsOption;
  if (typeof options['connectionName'] === 'string') result.connectionName = options['connectionName'];
  const ordered = pick(options['chordOrdered'], options['result_chord_ordered'], transport['result_chord_ordered']);
  if (ordered !== undefined) result.chordOrdered = expect('chordOrdered', ordered, 'boolean');
  if (typeof options['maxEarlySubscriptions'] === 'number') result.maxEarlySubscriptions = options['maxEarlySubscriptions'];
  const logger = options['logger'];
  if (isRecord(logger) && typeof logger['warn'] === 'function') result.logger = logger as unknown as { warn(message: string): void };
  return result;
}

/** Celery's `global_keyprefix` rule: add `_` unless the prefix ends in `:`, `_`, `-` or `.`. */
export function withGlobalPrefix(prefix: string): string {
  if (prefix === '') return '';
  return ':_-.'.includes(prefix.slice(-1)) ? prefix : `${prefix}_`;
}

type OptionType<T> = T extends 'string' ? string : T extends 'number' ? number : boolean;

function expect<T extends 'string' | 'number' | 'boolean'>(name: string, value: unknown, type: T): OptionType<T> {
  if (typeof value !== type) throw new KqError(`The Redis result backend option ${name} must be a ${type}, not ${JSON.stringify(value)}.`);
  return value as OptionType<T>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

