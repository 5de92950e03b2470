// bee-queue: createJob().save() / saveAll, Queue#process, and job events for round trips.
// Producers are configured as bee-queue recommends for producer-only queues (no worker, no events, no job store);
// drain workers remove succeeded jobs and send no events nobody listens to, as kq keeps nothing after an ack.
import BeeQueue from 'bee-queue';
import { type RunnerSpec } from '../protocol';
import { announceReady, awaitGo, CompletionTracker, cpuSince, drainDone, measureRoundTrips, publishSteadily, report, runMain, since } from './runner-kit';

interface JobData {
  index: number;
}

function redis(spec: RunnerSpec): { host: string; port: number; db: number } {
  const url = new URL(spec.url);
  return { host: url.hostname, port: Number(url.port || 6379), db: Number(url.pathname.slice(1) || 0) };
}

async function enqueue(spec: RunnerSpec, timed: boolean): Promise<void> {
  const queue = new BeeQueue<JobData>(spec.queue, { redis: redis(spec), isWorker: false, getEvents: false, sendEvents: false, storeJobs: false });
  await queue.ready();
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  if (spec.mode === 'awaited' && timed) {
    for (let index = 0; index < spec.n; index++) await queue.createJob({ index }).save();
  } else {
    for (let at = 0; at < spec.n; at += spec.batch) {
      const jobs: Array<BeeQueue.Job<JobData>> = [];
      for (let index = at; index < Math.min(spec.n, at + spec.batch); index++) jobs.push(queue.createJob({ index }));
      const errors = await queue.saveAll(jobs);
      if (errors.size > 0) throw new Error(`saveAll failed for ${errors.size} jobs: ${String([...errors.values()][0])}`);
    }
  }
  const elapsedMs = since(start);
  await queue.close();
  report({ kind: 'enqueue', elapsedMs, published: spec.n, cpuUs: cpuSince(cpuStart) });
}

async function drain(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const tracker = new CompletionTracker(spec.n);
  const start = performance.now();
  const queue = new BeeQueue<JobData>(spec.queue, { redis: redis(spec), getEvents: false, sendEvents: false, removeOnSuccess: true });
  // 'succeeded' is emitted once the job's finishing MULTI (remove from active, delete the job) has executed.
  queue.on('succeeded', (job) => tracker.complete(job.data.index));
  queue.on('failed', (job, error) => process.stderr.write(`job ${job.id} failed: ${error.message}\n`));
  queue.process(spec.concurrency, async (job) => job.data.index);
  await drainDone(spec, tracker);
  const elapsedMs = since(start);
  await queue.close();
  report(tracker.result(elapsedMs, spec.shared));
}

async function serve(spec: RunnerSpec): Promise<void> {
  const queue = new BeeQueue<JobData>(spec.queue, { redis: redis(spec), getEvents: false });
  await queue.ready();
  queue.process(spec.concurrency, async (job) => job.data.index);
  // Under load: a second queue in this process, the one a `load` runner keeps busy (a bee-queue Queue is one queue).
  if (spec.loadQueue) {
    const busy = new BeeQueue<JobData>(spec.loadQueue, { redis: redis(spec), getEvents: false, sendEvents: false, removeOnSuccess: true });
    await busy.ready();
    busy.process(spec.concurrency, async (job) => job.data.index);
  }
  announceReady();
  await new Promise(() => undefined);
}

async function roundTrip(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const queue = new BeeQueue<JobData>(spec.queue, { redis: redis(spec), isWorker: false, storeJobs: false });
  await queue.ready();
  // The queue-wide 'job succeeded' event, by job id: a job's own 'succeeded' event is lost when the worker finishes
  // before save() has registered the job (the event and the save reply travel on different connections).
  const early = new Map<string, unknown>();
  const waiting = new Map<string, (result: unknown) => void>();
  queue.on('job succeeded', (id, result) => {
    const resolve = waiting.get(id);
    if (resolve) {
      waiting.delete(id);
      resolve(result);
    } else early.set(id, result);
  });
  const result = await measureRoundTrips(spec.n, async (index) => {
    const job = await queue.createJob({ index }).save();
    if (early.has(job.id)) {
      const value = early.get(job.id);
      early.delete(job.id);
      return value;
    }
    return new Promise<unknown>((resolve) => waiting.set(job.id, resolve));
  });
  await queue.close();
  report(result);
}

async function load(spec: RunnerSpec): Promise<void> {
  const queue = new BeeQueue<JobData>(spec.loadQueue ?? spec.queue, { redis: redis(spec), isWorker: false, getEvents: false, sendEvents: false, storeJobs: false });
  await queue.ready();
  await publishSteadily(spec.ratePerSecond ?? 1000, spec.n, async (indexes) => {
    const errors = await queue.saveAll(indexes.map((index) => queue.createJob({ index })));
    if (errors.size > 0) throw new Error(`saveAll failed for ${errors.size} jobs: ${String([...errors.values()][0])}`);
  });
}

runMain(async (spec) => {
  switch (spec.role) {
    case 'enqueue':
      return enqueue(spec, true);
    case 'fill':
      return enqueue(spec, false);
    case 'drain':
      return drain(spec);
    case 'serve':
      return serve(spec);
    case 'roundtrip':
      return roundTrip(spec);
    case 'load':
      return load(spec);
  }
});
