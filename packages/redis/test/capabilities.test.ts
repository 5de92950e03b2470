import { randomUUID } from 'node:crypto';
import { brokerReachable, defineBeatLeaseSuite, defineChordJoinSuite, defineCycleRegisterSuite, defineDeadLetterSuite, defineDelayedCountSuite } from '@kq/test-harness';
import { afterAll } from 'vitest';
import { RedisResultBackend, type RedisBeatLease, type RedisTransport } from '../src/index';
import { cleanup, makeTransport, rawClient, redisUrl, uniquePrefix } from './helpers/redis-test-env';

// The Redis transport's capabilities against the shared suites, under a key prefix of this file's own.
const up = await brokerReachable('redis');
const prefix = uniquePrefix('capabilities');
const client = up ? rawClient() : undefined;
const skip = !up && 'Redis is not reachable';

afterAll(async () => {
  if (!client) return;
  await cleanup(client, prefix);
  client.disconnect();
});

const create = (): RedisTransport => makeTransport(prefix);

defineBeatLeaseSuite({
  name: 'redis',
  create,
  skip,
  // A leader that paused past its lease: the lease key expired, and the next campaigner takes it.
  loseLeadership: async (lease, transport) => {
    await (transport as RedisTransport).redisStore.commands.del((lease as RedisBeatLease).keys.lease);
  },
});
defineCycleRegisterSuite({ name: 'redis', create, skip });
defineDeadLetterSuite({ name: 'redis', create, skip, keepsReason: true });
defineChordJoinSuite({ name: 'redis', create: () => new RedisResultBackend(redisUrl(), { keyPrefix: prefix }), skip });
// Each transport a delayed set of its own, under this file's prefix.
defineDelayedCountSuite({ name: 'redis', create: () => makeTransport(`${prefix}${randomUUID().slice(0, 8)}:`), skip, byQueue: true });
