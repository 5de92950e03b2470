import { fileURLToPath } from 'node:url';
import { MemoryBroker } from '@kq/core';
import { afterEach, describe, expect, it } from 'vitest';
import { Logger } from '../src/log/logger';
import type { SchedulingStrategy } from '../src/pool/pool';
import type { Worker } from '../src/runtime/worker';
import { app, tasks, type Timed } from './fixtures/pool/pool-app';

// Celery's -O fair vs fcfs (packages/worker/docs/pools.md#fair-or-first-come-scheduling--o): one long task and several
// short ones on two children. Under fair a job is written only to an idle child, so the short ones all run on the other
// child while the long one runs; under fcfs jobs go round-robin, so every other short task queues behind the long one
// although a child is idle.
const appModule = fileURLToPath(new URL('./fixtures/pool/pool-app.ts', import.meta.url));
const LONG_MS = 1500;
const SHORTS = 6;

interface Measured extends Timed {
  id: string;
  long: boolean;
  /** ms from the worker receiving the message to the task starting in its child. */
  wait: number;
}

let worker: Worker | undefined;

afterEach(async () => {
  await worker?.stop({ cold: true });
  worker = undefined;
  await app.close();
});

async function runMix(strategy: SchedulingStrategy): Promise<Measured[]> {
  const broker = `pool-scheduling-${strategy}-${process.pid}`;
  MemoryBroker.reset(broker);
  app.conf.broker = `memory://${broker}`;
  app.conf.backend = `memory://${broker}`;
  worker = app.worker({
    pool: 'processes',
    appModule,
    concurrency: 2,
    schedulingStrategy: strategy,
    prefetchMultiplier: 4,
    hostname: `sched-${strategy}@test`,
    logger: new Logger('test', { level: 'error', sink: () => undefined }),
  });
  const received = new Map<string, number>();
  worker.on('task', (kind, request) => {
    if (kind === 'received') received.set(request.id, Date.now());
  });
  await worker.start();
  const long = await tasks.sleep.delay(LONG_MS);
  const shorts = [];
  for (let i = 0; i < SHORTS; i++) shorts.push(await tasks.sleep.delay(0));
  const measured: Measured[] = [];
  for (const [result, isLong] of [[long, true], ...shorts.map((short) => [short, false] as const)] as const) {
    const timed = await result.get({ timeout: 20_000 });
    measured.push({ ...timed, id: result.id, long: isLong, wait: timed.start - (received.get(result.id) as number) });
  }
  await worker.stop();
  worker = undefined;
  await app.close();
  return measured;
}

describe('pool scheduling strategies', () => {
  it('fair: a short task never waits behind a long one while a child is idle; fcfs: it does', async () => {
    const fair = await runMix('fair');
    const fcfs = await runMix('fcfs');

    const fairLong = fair.find((task) => task.long) as Measured;
    const fairShorts = fair.filter((task) => !task.long);
    // Every short task started while the long one was still running, on the other child.
    for (const short of fairShorts) {
      expect(short.start).toBeLessThan(fairLong.end);
      expect(short.pid).not.toBe(fairLong.pid);
    }

    const fcfsLong = fcfs.find((task) => task.long) as Measured;
    const queuedBehind = fcfs.filter((task) => !task.long && task.pid === fcfsLong.pid);
    // Round-robin: every other short task went to the long task's child and started only after it ended.
    expect(queuedBehind).toHaveLength(SHORTS / 2);
    for (const short of queuedBehind) expect(short.start).toBeGreaterThanOrEqual(fcfsLong.end);

    const maxWait = (tasks: Measured[]): number => Math.max(...tasks.filter((task) => !task.long).map((task) => task.wait));
    expect(maxWait(fcfs)).toBeGreaterThan(maxWait(fair));
    // The short ones behind the long one waited about as long as it ran; under fair none did.
    expect(maxWait(fcfs)).toBeGreaterThan(fcfsLong.end - fcfsLong.start - 100);
    expect(maxWait(fair)).toBeLessThan(fairLong.end - fairLong.start);
  });
});
