import type { RedisOptions } from 'ioredis';

/**
 * How long an idle kq consumer's BRPOP waits before it asks again, by default (`pollIntervalMs`). Kombu asks every
 * second (`brpop_timeout`); a message wakes the wait at once whatever its length, and a cancelled consumer's wait is
 * ended with CLIENT UNBLOCK (`BlockingPool`), so the length only sets how often an idle worker costs Redis a
 * command: in an idle fleet of 200 workers, 200 BRPOPs a second at Kombu's 1 s, the largest share of its commands
 * (20 a second at 10 s). Nothing else rests on it: a connection's liveness is TCP keepalive's (ioredis sets it), and
 * Redis never times out a client blocked in BRPOP.
 */
export const IDLE_BLOCK_MS = 30_000;

/** Kombu's BRPOP timeout: kept for the cluster layout (see `defaultBlockMs`). */
const KOMBU_BLOCK_MS = 1000;

/** Room left between a wait's end and a client-side timeout that would otherwise fail it. */
const TIMEOUT_MARGIN_MS = 500;

/**
 * The BRPOP wait when `pollIntervalMs` (Kombu's `brpop_timeout`/`polling_interval`) is not given: `IDLE_BLOCK_MS`,
 * shortened under an ioredis `commandTimeout` or `socketTimeout` (either would fail a longer wait as a dead
 * connection). The cluster layout keeps Kombu's second: a wait on a slot that moves to another master is not ended by
 * the move, so a short wait bounds how long a consumer listens to the old one.
 */
export function defaultBlockMs(cluster: boolean, redisOptions: RedisOptions | undefined): number {
  if (cluster) return KOMBU_BLOCK_MS;
  const limits = [redisOptions?.commandTimeout, redisOptions?.socketTimeout].filter((ms): ms is number => typeof ms === 'number' && ms > 0);
  const under = Math.min(IDLE_BLOCK_MS, ...limits.map((ms) => ms - TIMEOUT_MARGIN_MS));
  return Math.max(KOMBU_BLOCK_MS, under);
}
