import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskFailedError } from '../src/errors/errors';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';

// A task that kills its child every time, with acks late + reject on worker lost, is requeued again and again;
// on a quorum queue RabbitMQ counts the deliveries and the worker's workerMaxRedeliveries guard ends the loop.
const appModule = fileURLToPath(new URL('./fixtures/pool/broker-app.ts', import.meta.url));
const up = (await brokerReachable('amqp')) && (await brokerReachable('redis'));
const queue = `kq-pool-${randomUUID().slice(0, 8)}`;
// Read by the fixture when it is imported, here and in every child (they inherit the env).
process.env['KQ_POOL_TEST_QUEUE'] = queue;
process.env['KQ_POOL_TEST_QUORUM'] = '1';
process.env['KQ_POOL_TEST_BROKER'] = brokerUrls.amqp;
process.env['KQ_POOL_TEST_BACKEND'] = `${brokerUrls.redis.replace(/\/\d*$/, '')}/11`;
const { app, tasks } = await import('./fixtures/pool/broker-app');

describe.skipIf(!up)('the processes pool on RabbitMQ', () => {
  let worker: Worker;
  const rejected: string[] = [];

  beforeAll(async () => {
    app.conf.workerMaxRedeliveries = 2;
    worker = app.worker({ pool: 'processes', appModule, concurrency: 2, hostname: `pool-amqp-${queue}@test`, logger: new Logger('test', { level: 'critical', sink: () => undefined }) });
    worker.on('rejected', (_delivery, reason) => rejected.push(reason.message));
    await worker.start();
  });

  afterAll(async () => {
    await worker?.stop({ cold: true });
    await app.connection.ensure((channel) => channel.deleteQueue(queue)).catch(() => undefined);
    await app.close();
  });

  it('breaks the crash loop once the broker counted enough deliveries', async () => {
    const result = await tasks.crash.delay();
    const error = await result.get({ timeout: 30_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskFailedError);
    expect((error as TaskFailedError).excType).toBe('WorkerLostError');
    expect((error as TaskFailedError).message).toMatch(/delivered 3 times/);
    expect(rejected).toHaveLength(1);
  });
});
