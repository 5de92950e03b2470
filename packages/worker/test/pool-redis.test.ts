import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';

// The processes pool on Redis: a child publishes its retry through its own app's connection (no relay).
const appModule = fileURLToPath(new URL('./fixtures/pool/broker-app.ts', import.meta.url));
const up = await brokerReachable('redis');
const url = `${brokerUrls.redis.replace(/\/\d*$/, '')}/11`;
const queue = `kq-pool-${randomUUID().slice(0, 8)}`;
// Read by the fixture when it is imported, here and in every child (they inherit the env).
process.env['KQ_POOL_TEST_QUEUE'] = queue;
process.env['KQ_POOL_TEST_BROKER'] = url;
process.env['KQ_POOL_TEST_BACKEND'] = url;
const { app, tasks } = await import('./fixtures/pool/broker-app');

describe.skipIf(!up)('the processes pool on Redis', () => {
  let worker: Worker;

  beforeAll(async () => {
    worker = app.worker({ pool: 'processes', appModule, concurrency: 1, hostname: `pool-redis-${queue}@test`, logger: new Logger('test', { level: 'error', sink: () => undefined }) });
    await worker.start();
  });

  afterAll(async () => {
    await worker?.stop({ cold: true });
    await app.connection.ensure((channel) => channel.deleteQueue(queue)).catch(() => undefined);
    await app.close();
  });

  it("retries from a child through the child app's own connection", async () => {
    const result = await tasks.retryOnce.delay();
    expect(await result.get({ timeout: 20_000 })).toEqual({ child: 'processes', retries: 1, relayed: false });
  });
});
