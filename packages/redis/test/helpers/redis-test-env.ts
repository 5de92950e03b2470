import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { brokerUrls } from '@kq/test-harness';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { RedisTransport, type RedisTransportOptions } from '../../src/index';

/** A key prefix of its own per test file (and run), so parallel files never see each other's keys. */
export function uniquePrefix(file: string): string {
  return `kqtest:${file}:${randomUUID().slice(0, 8)}:`;
}

/** The test broker URL with a database number. */
export function redisUrl(db = 0): string {
  return `${brokerUrls.redis.replace(/\/\d*$/, '')}/${db}`;
}

/** A plain ioredis client for looking at what the transport wrote. */
export function rawClient(db = 0): Redis {
  return new Redis(redisUrl(db), { lazyConnect: false, maxRetriesPerRequest: 3 });
}

export function makeTransport(prefix: string, options: RedisTransportOptions = {}, db = 0): RedisTransport {
  return new RedisTransport(redisUrl(db), { globalKeyprefix: prefix, logger: quietLogger, ...options });
}

/** Collects warnings instead of printing them (tests assert on them where it matters). */
export const warnings: string[] = [];
export const quietLogger = { warn: (message: string): void => void warnings.push(message) };

/** Deletes every key under the prefix. */
export async function cleanup(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await client.del(...keys);
  } while (cursor !== '0');
}

export async function waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Kills this transport's connections on the server (CLIENT KILL ID for each client named with its prefix). */
export async function killConnections(client: Redis, namePrefix: string): Promise<number> {
  const list = (await client.client('LIST')) as string;
  let killed = 0;
  for (const line of list.split('\n')) {
    const id = /\bid=(\d+)/.exec(line)?.[1];
    const name = /\bname=(\S*)/.exec(line)?.[1] ?? '';
    if (id && name.startsWith(namePrefix)) {
      killed += Number(await client.client('KILL', 'ID', id));
    }
  }
  return killed;
}

/** What {@link useRedisFixture} gives a describe block. */
export interface RedisFixture {
  /** The key prefix of this block's transports. */
  readonly prefix: string;
  /** A raw client for looking at what the transports wrote (made before the first test). */
  readonly redis: Redis;
  /** Child processes to SIGKILL after each test. */
  readonly children: ChildProcess[];
  /** A transport under the prefix with the block's default options; closed after each test. */
  transport(options?: RedisTransportOptions): RedisTransport;
}

/**
 * Registers, in the calling describe block, what a test of transports against real Redis needs: transports closed and
 * children killed after each test, the prefix's keys deleted and the raw client closed after the block.
 */
export function useRedisFixture(file: string, defaults: RedisTransportOptions = {}): RedisFixture {
  const prefix = uniquePrefix(file);
  const transports: RedisTransport[] = [];
  const children: ChildProcess[] = [];
  let redis: Redis | undefined;
  beforeAll(() => {
    redis = rawClient();
  });
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    await Promise.all(transports.splice(0).map((made) => made.close()));
  });
  afterAll(async () => {
    if (!redis) return;
    await cleanup(redis, prefix);
    redis.disconnect();
  });
  return {
    prefix,
    children,
    get redis(): Redis {
      if (!redis) throw new Error('useRedisFixture: the raw client is made in beforeAll; use it inside a test');
      return redis;
    },
    transport(options: RedisTransportOptions = {}): RedisTransport {
      const made = makeTransport(prefix, { ...defaults, ...options });
      transports.push(made);
      return made;
    },
  };
}
