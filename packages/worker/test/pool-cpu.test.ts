import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MemoryBroker } from '@kq/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';
import { app, tasks } from './fixtures/pool/pool-app';

// CPU-bound tasks on the processes pool use both cores: with -c 2, CPU-bound runs execute in two processes at the
// same moment (a process runs on one core at a time, so overlapping runs in two processes are two cores at work).
// That is asserted; the speed-up against -c 1 is measured and printed, never asserted — the test suite runs
// beside other test files, and a time on a shared machine proves nothing.
const appModule = fileURLToPath(new URL('./fixtures/pool/pool-app.ts', import.meta.url));
const cores = availableParallelism();
if (cores < 2) console.warn(`[kq] skipping the CPU-bound pool test: it needs 2 cores, this machine has ${cores}.`);

const TASKS = 8;
const FIB = 33;

describe.skipIf(cores < 2)('CPU-bound tasks on the processes pool', () => {
  const broker = `pool-cpu-${process.pid}`;
  const workers: Worker[] = [];

  beforeAll(async () => {
    MemoryBroker.reset(broker);
    app.conf.broker = `memory://${broker}`;
    app.conf.backend = `memory://${broker}`;
    for (const concurrency of [1, 2]) {
      const worker = app.worker({
        pool: 'processes',
        appModule,
        concurrency,
        queues: [`cpu-${concurrency}`],
        hostname: `cpu-${concurrency}@test`,
        logger: new Logger('test', { level: 'error', sink: () => undefined }),
      });
      await worker.start();
      workers.push(worker);
    }
  });

  afterAll(async () => {
    for (const worker of workers) await worker.stop({ cold: true });
    await app.close();
    MemoryBroker.reset(broker);
  });

  interface Run {
    pid: number;
    start: number;
    end: number;
  }

  /** Wall time of one batch and where and when each task ran. */
  const measure = async (concurrency: number): Promise<{ ms: number; runs: Run[] }> => {
    const started = performance.now();
    const results = await Promise.all(Array.from({ length: TASKS }, () => tasks.burn.applyAsync([FIB], { queue: `cpu-${concurrency}` })));
    const runs: Run[] = [];
    for (const result of results) runs.push(await result.get({ timeout: 60_000 }));
    return { ms: performance.now() - started, runs };
  };

  it('runs CPU-bound tasks in two processes at once with -c 2 (and reports the speed-up over -c 1)', async () => {
    await measure(2); // warm both children's code paths
    const one = await measure(1);
    const two = await measure(2);
    const pids = new Set(two.runs.map((run) => run.pid));
    expect(pids.size).toBe(2);
    // Some run of one child overlaps some run of the other: both computed at the same time.
    const overlapping = two.runs.some((a) => two.runs.some((b) => a.pid !== b.pid && a.start < b.end && b.start < a.end));
    expect(overlapping).toBe(true);
    console.log(
      `${TASKS} × fib(${FIB}) on processes: -c 1 ${one.ms.toFixed(0)} ms, -c 2 ${two.ms.toFixed(0)} ms, ratio ${(two.ms / one.ms).toFixed(2)} (load ${loadavg()[0]?.toFixed(1)})`,
    );
  }, 120_000);
});
