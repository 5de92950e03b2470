// The worker pools side by side on a CPU-bound task, in the same run:
//
//   cd bench && pnpm exec tsx src/pool-bench.ts [--n=200] [--fib=27] [--runs=3] [--concurrency=<cores>]
//
// Each pool (async: the event loop; threads: worker_threads; processes: child processes) runs --n tasks of
// fib(--fib) with -c --concurrency, --runs times after one warm-up batch; the median wall time is reported with the
// pool's speed-up over async (async time / pool time). A second case runs --n no-op tasks: what crossing to a child
// costs per task. Memory broker and backend (no network), pool start-up excluded. The speed-up needs idle cores:
// on a machine busy with other work (see the load printed) the ratios shrink toward 1.
import { availableParallelism, cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Logger, type PoolKind } from '@kq/worker';
import { app, fibTask, noopTask } from './pool-bench-app';

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [key, value] = arg.replace(/^--/, '').split('=');
    return [key as string, value ?? 'true'];
  }),
);
const N = Number(args.get('n') ?? 200);
const FIB = Number(args.get('fib') ?? 27);
const RUNS = Number(args.get('runs') ?? 3);
const CONCURRENCY = Number(args.get('concurrency') ?? availableParallelism());
const POOLS: PoolKind[] = ['async', 'threads', 'processes'];
const appModule = fileURLToPath(new URL('./pool-bench-app.ts', import.meta.url));

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

async function batch(send: () => Promise<{ get(options: { timeout: number }): Promise<unknown> }>): Promise<number> {
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: N }, send));
  for (const result of results) await result.get({ timeout: 600_000 });
  return performance.now() - started;
}

// All three workers run side by side, each on its own queue, and the runs interleave the pools, so a machine whose
// load changes during the bench slows every pool alike.
const workers = new Map(
  POOLS.map((pool) => [
    pool,
    app.worker({
      pool,
      appModule,
      concurrency: CONCURRENCY,
      queues: [`bench-${pool}`],
      hostname: `pool-bench-${pool}@bench`,
      logger: new Logger('bench', { level: 'error' }),
    }),
  ]),
);
for (const worker of workers.values()) await worker.start();
const cpu = new Map<PoolKind, number[]>(POOLS.map((pool) => [pool, []]));
const noop = new Map<PoolKind, number[]>(POOLS.map((pool) => [pool, []]));
for (const pool of POOLS) await batch(() => fibTask.applyAsync([FIB], { queue: `bench-${pool}` })); // warm-up: JIT, child code paths
for (let run = 0; run < RUNS; run++) {
  for (const pool of POOLS) {
    cpu.get(pool)?.push(await batch(() => fibTask.applyAsync([FIB], { queue: `bench-${pool}` })));
    noop.get(pool)?.push(await batch(() => noopTask.applyAsync([], { queue: `bench-${pool}` })));
  }
}
for (const worker of workers.values()) await worker.stop();
await app.close();

interface Row {
  pool: PoolKind;
  cpuMs: number;
  noopMs: number;
}
const rows: Row[] = POOLS.map((pool) => ({ pool, cpuMs: median(cpu.get(pool) ?? []), noopMs: median(noop.get(pool) ?? []) }));
for (const pool of POOLS) {
  const runs = (values: number[] | undefined): string => (values ?? []).map((ms) => ms.toFixed(0)).join(', ');
  console.error(`${pool}: cpu ${runs(cpu.get(pool))} ms; noop ${runs(noop.get(pool))} ms`);
}

const base = rows.find((row) => row.pool === 'async') as Row;
console.log(`\n${N} × fib(${FIB}), -c ${CONCURRENCY}, ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), median of ${RUNS}, load ${loadavg()[0]?.toFixed(1)}`);
console.log('pool       | cpu-bound ms | tasks/s | speed-up vs async | no-op ms | no-op tasks/s | vs async');
for (const row of rows) {
  console.log(
    [
      row.pool.padEnd(10),
      row.cpuMs.toFixed(0).padStart(12),
      ((N / row.cpuMs) * 1000).toFixed(0).padStart(7),
      `${(base.cpuMs / row.cpuMs).toFixed(2)}×`.padStart(17),
      row.noopMs.toFixed(0).padStart(8),
      ((N / row.noopMs) * 1000).toFixed(0).padStart(13),
      `${(base.noopMs / row.noopMs).toFixed(2)}×`.padStart(8),
    ].join(' | '),
  );
}
