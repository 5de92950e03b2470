import { fileURLToPath } from 'node:url';
import { MemoryBroker } from '@kq/core';
import { afterEach, describe, expect, it } from 'vitest';
import { Logger, type LogRecord } from '../src/log/logger';
import type { ChildPool } from '../src/pool/child-pool';
import type { Worker, WorkerOptions } from '../src/runtime/worker';
import { app, tasks } from './fixtures/pool/pool-app';

// The autoscaler driving a real thread pool under a burst, and the pool_grow / pool_shrink / autoscale commands.
const appModule = fileURLToPath(new URL('./fixtures/pool/pool-app.ts', import.meta.url));

async function waitFor(predicate: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let worker: Worker | undefined;
let seq = 0;
const logs: LogRecord[] = [];

async function startWorker(options: WorkerOptions): Promise<{ worker: Worker; pool: ChildPool }> {
  const broker = `autoscale-${process.pid}-${++seq}`;
  MemoryBroker.reset(broker);
  app.conf.broker = `memory://${broker}`;
  app.conf.backend = `memory://${broker}`;
  logs.length = 0;
  worker = app.worker({
    pool: 'threads',
    appModule,
    hostname: `autoscale-${seq}@test`,
    logger: new Logger('test', { level: 'info', sink: (record) => void logs.push(record) }),
    ...options,
  });
  await worker.start();
  return { worker, pool: worker.pool as ChildPool };
}

afterEach(async () => {
  await worker?.stop({ cold: true });
  worker = undefined;
  await app.close();
});

const command = async (name: string, args: Record<string, unknown> = {}): Promise<unknown> => {
  const replies = await app.control.broadcast(name, { arguments: args, reply: true, timeout: 2000, destination: [worker?.hostname ?? ''] });
  return Object.values(replies[0] ?? {})[0];
};

describe('autoscaling a thread pool', () => {
  it('grows under a burst up to max, with the prefetch following, and shrinks back to min after keepalive', async () => {
    const { worker, pool } = await startWorker({ autoscale: { max: 4, min: 1, keepalive: 0.5 }, prefetchMultiplier: 2 });
    expect(pool.limit).toBe(1);
    expect(worker.prefetchCount).toBe(2);

    let largestPool = 0;
    let mostChildren = 0;
    let mostHeld = 0;
    const sampler = setInterval(() => {
      largestPool = Math.max(largestPool, pool.limit);
      mostChildren = Math.max(mostChildren, pool.childIds.length);
      mostHeld = Math.max(mostHeld, worker.state.reserved.size);
    }, 5);
    try {
      const results = await Promise.all(Array.from({ length: 16 }, () => tasks.sleep.delay(400)));
      const ran = await Promise.all(results.map((result) => result.get({ timeout: 30_000 })));
      expect(ran.every((where) => where.child === 'threads')).toBe(true);
    } finally {
      clearInterval(sampler);
    }
    expect(largestPool).toBe(4);
    expect(mostChildren).toBeGreaterThanOrEqual(4);
    // The live consumer's prefetch was raised with the pool. Tasks are acked as they start, so the worker holds at
    // most prefetch unacked messages plus the running ones: 2 + 1 at the start, never more than 4 × 2 + 4.
    expect(mostHeld).toBeGreaterThan(3);
    expect(mostHeld).toBeLessThanOrEqual(12);
    expect(logs.some((record) => record.message.startsWith('Scaling up'))).toBe(true);

    // Idle for keepalive: back to min, children stopped, prefetch back to 2. The pool may shrink while the last task
    // runs (qty 1 allows one child), and the task leaves the reserved set just after its result is out: wait for both.
    await waitFor(() => pool.limit === 1 && pool.childIds.length === 1 && worker.state.reserved.size === 0);
    expect(worker.prefetchCount).toBe(2);
    expect(logs.some((record) => record.message.startsWith('Scaling down'))).toBe(true);
    expect(worker.autoscaler?.info()).toEqual({ max: 4, min: 1, current: 1, qty: 0 });
  });

  it('answers autoscale with new bounds and refuses pool_grow / pool_shrink while autoscaling', async () => {
    const { worker, pool } = await startWorker({ autoscale: { max: 3, min: 1, keepalive: 30 }, prefetchMultiplier: 4 });
    expect(await command('autoscale', { max: 5, min: 2 })).toEqual({ ok: 'autoscale now max=5 min=2' });
    expect(pool.limit).toBe(2);
    expect(worker.prefetchCount).toBe(8);
    await waitFor(() => pool.childIds.length === 2);
    expect(await command('pool_grow', { n: 1 })).toEqual({ error: 'pool_grow is not supported with autoscale. Adjust autoscale range instead.' });
    expect(await command('pool_shrink')).toEqual({ error: 'pool_shrink is not supported with autoscale. Adjust autoscale range instead.' });
    expect(await command('autoscale', { max: 1, min: 3 })).toMatchObject({ error: expect.stringMatching(/min <= max/) });
    expect(pool.limit).toBe(2);
  });

  it('grows and shrinks a fixed pool with pool_grow / pool_shrink, and says autoscale is not enabled', async () => {
    const { worker, pool } = await startWorker({ concurrency: 1, prefetchMultiplier: 3 });
    expect(await command('pool_grow', { n: 2 })).toEqual({ ok: 'pool will grow' });
    expect(pool.limit).toBe(3);
    expect(worker.prefetchCount).toBe(9);
    await waitFor(() => pool.childIds.length === 3);
    expect(await (await tasks.add.delay(1, 1)).get({ timeout: 15_000 })).toBe(2);
    expect(await command('pool_shrink', { n: '1' })).toEqual({ ok: 'pool will shrink' });
    expect(pool.limit).toBe(2);
    expect(worker.prefetchCount).toBe(6);
    await waitFor(() => pool.childIds.length === 2);
    expect(await command('autoscale', { max: 4 })).toEqual({ error: "ValueError('Autoscale not enabled')" });
    expect(pool.info()).toMatchObject({ 'max-concurrency': 2, 'max-tasks-per-child': 'N/A', writes: { strategy: 'fair' } });
  });
});
