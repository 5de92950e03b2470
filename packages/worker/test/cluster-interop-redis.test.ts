// Issue #10's interop proof on Redis (database 9): see fixtures/cluster/interop-suite.ts.
import { brokerReachable, brokerUrls, pythonAvailable } from '@kq/test-harness';
import { describe } from 'vitest';
import { defineClusterInterop, redisCleanup } from './fixtures/cluster/interop-suite';

const DB = 9;
const ready = (await brokerReachable('redis')) && (await pythonAvailable(['celery', 'redis']));

describe.skipIf(!ready)('Redis', () => {
  defineClusterInterop({ kind: 'redis', url: `${brokerUrls.redis}/${DB}`, pythonUrl: `${brokerUrls.redis}/${DB}`, cleanup: redisCleanup(DB) });
});
