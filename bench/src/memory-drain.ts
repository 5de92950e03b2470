// The worker's own CPU per task, with no broker process in the way: a W2-style drain on the memory transport.
//
//   cd bench && pnpm exec tsx src/memory-drain.ts [--n=20000] [--concurrency=100] [--checkout=/path/to/kq]
//
// N + 5,000 no-op tasks are queued first; one worker in this process then drains them, and the CPU of the process
// (user + system, `process.cpuUsage`) from the 5,000th task to the last, divided by N, is printed as one JSON line
// with the tasks per second. The first 5,000 leave start-up and the JIT's warm-up out. `--checkout` runs another
// checkout's built @kq/worker (its packages/worker/dist, after `pnpm build` there), so two versions can be compared
// run by run, interleaved, on a machine whose load changes.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as KqWorker from '@kq/worker';

type WorkerModule = typeof KqWorker;

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [key, value] = arg.replace(/^--/, '').split('=');
    return [key as string, value ?? 'true'];
  }),
);
const N = Number(args.get('n') ?? 20000);
const CONCURRENCY = Number(args.get('concurrency') ?? 100);
const CHECKOUT = args.get('checkout');
const WARM_UP = 5000;
const BATCH = 1000;

const { App, Logger } = (CHECKOUT
  ? await import(pathToFileURL(join(CHECKOUT, 'packages', 'worker', 'dist', 'index.js')).href)
  : await import('@kq/worker')) as WorkerModule;

const app = new App('memory-drain', { broker: `memory://memory-drain-${process.pid}` });
let done = 0;
let cpuAtWarm: NodeJS.CpuUsage | undefined;
let startedAt = 0;
let finish: () => void = () => undefined;
const finished = new Promise<void>((resolve) => (finish = resolve));
const noop = app.task('bench.noop', () => {
  done++;
  if (done === WARM_UP) {
    cpuAtWarm = process.cpuUsage();
    startedAt = performance.now();
  }
  if (done === WARM_UP + N) finish();
  return null;
});

const total = WARM_UP + N;
for (let sent = 0; sent < total; sent += BATCH) {
  await noop.applyMany(Array.from({ length: Math.min(BATCH, total - sent) }, () => []), { ignoreResult: true });
}
const worker = app.worker({ concurrency: CONCURRENCY, logger: new Logger('memory-drain', { level: 'error' }) });
await worker.start();
await finished;
const seconds = (performance.now() - startedAt) / 1000;
const cpu = process.cpuUsage(cpuAtWarm);
console.log(
  JSON.stringify({
    checkout: CHECKOUT ?? 'this one',
    n: N,
    concurrency: CONCURRENCY,
    workerCpuUsPerTask: Number(((cpu.user + cpu.system) / N).toFixed(2)),
    tasksPerSecond: Math.round(N / seconds),
  }),
);
await worker.stop();
await app.close();
process.exit(0);
