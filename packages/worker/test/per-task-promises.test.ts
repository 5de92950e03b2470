/**
 * What a task costs the worker in promises, counted (not timed): under AsyncLocalStorage, which a worker running
 * tasks enables, every promise runs an async hook and carries the context, so a flood of short tasks pays for each.
 * Receiving a task on time and handing it to the pool costs none; running one that returns at once, with no result
 * backend, acks late, what its ack costs. A change that adds per-task promises fails here, whatever the machine's load.
 */
import { createHook } from 'node:async_hooks';
import { MemoryBroker } from '@kq/core';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';

const TASKS = 500;
/**
 * Measured at 3.6: the ack's promise, its continuation, the pool's (10.8 before a task that returns at once settled
 * inline; 23.6 before receipt, settles and the async pool stopped making their own).
 */
const MOST_PROMISES_PER_TASK = 5;

describe('promises per task', () => {
  let app: App | undefined;
  let worker: Worker | undefined;

  afterEach(async () => {
    await worker?.stop({ cold: true });
    await app?.close();
  });

  it(`runs a task on memory:// (acks late, no backend) with at most ${MOST_PROMISES_PER_TASK} promises`, async () => {
    const broker = 'per-task-promises';
    MemoryBroker.reset(broker);
    app = new App('cost', { broker: `memory://${broker}`, backend: null, taskAcksLate: true });
    app.task('cost.noop', (_ctx, index: number) => index);
    await app.connection.connect();
    await app.sendTasks(Array.from({ length: TASKS }, (_, index) => ({ name: 'cost.noop', args: [index] })));
    let succeeded = 0;
    let allDone: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (allDone = resolve));
    worker = app.worker({ concurrency: 100, hostname: 'cost@test', logger: new Logger('cost', { level: 'critical', sink: () => undefined }), cluster: false });
    worker.on('task', (kind) => {
      if (kind === 'succeeded' && ++succeeded === TASKS) allDone();
    });
    let promises = 0;
    let counting = false;
    const hook = createHook({
      init(_id, type) {
        if (counting && type === 'PROMISE') promises++;
      },
    }).enable();
    try {
      await worker.start();
      counting = true;
      await done;
      await worker.pool.drained();
      counting = false;
    } finally {
      hook.disable();
    }
    expect(promises / TASKS).toBeLessThanOrEqual(MOST_PROMISES_PER_TASK);
  });
});
