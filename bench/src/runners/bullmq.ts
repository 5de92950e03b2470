// BullMQ: Queue.add / addBulk, a Worker, and job.waitUntilFinished (QueueEvents) for round trips.
// Drain workers remove completed jobs (removeOnComplete: count 0), as kq keeps nothing after an ack.
import { Queue, QueueEvents, Worker, type ConnectionOptions } from 'bullmq';
import { TASK_NAME, type RunnerSpec } from '../protocol';
import { announceReady, awaitGo, CompletionTracker, cpuSince, drainDone, measureRoundTrips, publishSteadily, report, runMain, since } from './runner-kit';

interface JobData {
  index: number;
}

function connection(spec: RunnerSpec): ConnectionOptions {
  const url = new URL(spec.url);
  return { host: url.hostname, port: Number(url.port || 6379), db: Number(url.pathname.slice(1) || 0), maxRetriesPerRequest: null };
}

async function enqueue(spec: RunnerSpec, timed: boolean): Promise<void> {
  const queue = new Queue<JobData>(spec.queue, { connection: connection(spec) });
  await queue.waitUntilReady();
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  if (spec.mode === 'awaited' && timed) {
    for (let index = 0; index < spec.n; index++) await queue.add(TASK_NAME, { index });
  } else {
    for (let at = 0; at < spec.n; at += spec.batch) {
      const jobs = [];
      for (let index = at; index < Math.min(spec.n, at + spec.batch); index++) jobs.push({ name: TASK_NAME, data: { index } });
      await queue.addBulk(jobs);
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
  const worker = new Worker<JobData, number>(spec.queue, async (job) => job.data.index, {
    connection: connection(spec),
    concurrency: spec.concurrency,
    removeOnComplete: { count: 0 },
  });
  // 'completed' is emitted once the job was moved to completed in Redis (BullMQ's ack).
  worker.on('completed', (job) => tracker.complete(job.data.index));
  worker.on('failed', (job, error) => process.stderr.write(`job ${job?.id ?? '?'} failed: ${error.message}\n`));
  await drainDone(spec, tracker);
  const elapsedMs = since(start);
  await worker.close();
  report(tracker.result(elapsedMs, spec.shared));
}

async function serve(spec: RunnerSpec): Promise<void> {
  const worker = new Worker<JobData, number>(spec.queue, async (job) => job.data.index, { connection: connection(spec), concurrency: spec.concurrency });
  // Under load: a second Worker in this process on the queue a `load` runner keeps busy (a BullMQ Worker has one queue).
  const busy = spec.loadQueue
    ? new Worker<JobData, number>(spec.loadQueue, async (job) => job.data.index, { connection: connection(spec), concurrency: spec.concurrency, removeOnComplete: { count: 0 } })
    : null;
  await Promise.all([worker.waitUntilReady(), busy?.waitUntilReady()]);
  announceReady();
  await new Promise(() => undefined);
}

async function roundTrip(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const queue = new Queue<JobData, number>(spec.queue, { connection: connection(spec) });
  // From the start of the (freshly flushed) events stream: QueueEvents is "ready" before its first XREAD, and with
  // the default '$' a job finishing in between is never announced (its waitUntilFinished then times out).
  const events = new QueueEvents(spec.queue, { connection: connection(spec), lastEventId: '0-0' });
  await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
  const result = await measureRoundTrips(spec.n, async (index) => (await queue.add(TASK_NAME, { index })).waitUntilFinished(events, 30_000));
  await events.close();
  await queue.close();
  report(result);
}

async function load(spec: RunnerSpec): Promise<void> {
  const queue = new Queue<JobData>(spec.loadQueue ?? spec.queue, { connection: connection(spec) });
  await queue.waitUntilReady();
  await publishSteadily(spec.ratePerSecond ?? 1000, spec.n, (indexes) => queue.addBulk(indexes.map((index) => ({ name: TASK_NAME, data: { index }, opts: { removeOnComplete: true } }))));
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
