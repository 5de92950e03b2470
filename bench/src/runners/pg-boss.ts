// pg-boss 12: send / insert, work with its batch size, LISTEN/NOTIFY wake-ups (useListenNotify on the instance,
// notify on the queue — both opt-in, as pg-boss's docs say to enable them for low latency).
//
// Workers fetch `batchSize` jobs per statement and complete the batch in one statement once its handler returns;
// `burstWhenBatchFull` fetches again at once while batches come back full (otherwise pg-boss waits its polling
// interval after every fetch, even on a full queue). Concurrency 1 takes batches of 4 and runs them one at a time
// (kq's prefetch at concurrency 1 is 4); concurrency 100 is two fetch loops of 50 jobs each, run together. Completed
// jobs stay in the table until maintenance deletes them (pg-boss has no delete-on-complete); the runners turn off
// the scheduler and the supervisor, which would add their own statements to the measured ones.
//
// Round trips: pg-boss has no result waiting; the handler returns the result (stored on completion) and
// NOTIFYs the producer, which LISTENs — the same path kq's PostgreSQL results take.
import pg from 'pg';
import { PgBoss, type Job } from 'pg-boss';
import { type RunnerSpec } from '../protocol';
import { announceReady, awaitGo, CompletionTracker, cpuSince, measureRoundTrips, publishSteadily, report, runMain, since } from './runner-kit';

interface JobData {
  index: number;
}

/** The channel a round-trip handler NOTIFYs its result on (payload: the index). */
const RESULT_CHANNEL = 'kqbench_pgboss_result';

async function open(spec: RunnerSpec, options: { worker: boolean }): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: spec.url,
    useListenNotify: options.worker,
    schedule: false,
    supervise: false,
    // Producers and workers alike: a pool large enough for two fetch loops, their completions and the listener.
    max: 10,
  });
  boss.on('error', (error: Error) => process.stderr.write(`pg-boss error: ${error.message}\n`));
  await boss.start();
  // Idempotent; created with notify so inserts wake the workers.
  await boss.createQueue(spec.queue, { notify: true });
  return boss;
}

function workOptions(spec: RunnerSpec): { batchSize: number; localConcurrency: number; burstWhenBatchFull: boolean; pollingIntervalSeconds: number } {
  return spec.concurrency >= 100
    ? { batchSize: 50, localConcurrency: 2, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }
    : { batchSize: 4, localConcurrency: 1, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 };
}

async function enqueue(spec: RunnerSpec, timed: boolean): Promise<void> {
  const boss = await open(spec, { worker: false });
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  if (spec.mode === 'awaited' && timed) {
    for (let index = 0; index < spec.n; index++) await boss.send(spec.queue, { index });
  } else {
    for (let at = 0; at < spec.n; at += spec.batch) {
      const jobs: Array<{ data: JobData }> = [];
      for (let index = at; index < Math.min(spec.n, at + spec.batch); index++) jobs.push({ data: { index } });
      await boss.insert(spec.queue, jobs);
    }
  }
  const elapsedMs = since(start);
  await boss.stop({ graceful: false });
  report({ kind: 'enqueue', elapsedMs, published: spec.n, cpuUs: cpuSince(cpuStart) });
}

/** Runs a batch the way the concurrency asks: one job at a time (1) or all together. */
async function runBatch(spec: RunnerSpec, jobs: Array<Job<JobData>>, run: (job: Job<JobData>) => Promise<number>): Promise<void> {
  if (spec.concurrency >= 100) await Promise.all(jobs.map(run));
  else for (const job of jobs) await run(job);
}

async function drain(spec: RunnerSpec): Promise<void> {
  // Connected before the clock starts: it only reads the job table back at the end.
  const checker = new pg.Client({ connectionString: spec.url });
  await checker.connect();
  await awaitGo();
  const tracker = new CompletionTracker(spec.n);
  const start = performance.now();
  const boss = await open(spec, { worker: true });
  await boss.work<JobData>(spec.queue, workOptions(spec), async (jobs) => {
    await runBatch(spec, jobs, async (job) => job.data.index);
    for (const job of jobs) tracker.complete(job.data.index);
  });
  await tracker.done;
  // pg-boss completes a batch in its own statement after the handler returns (it has no event for it): the last
  // one is over when the table holds nothing created, retrying or active.
  for (;;) {
    const { rows } = await checker.query<{ open: string }>(
      "SELECT count(*) AS open FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry', 'active')",
      [spec.queue],
    );
    if (Number(rows[0]?.open ?? 1) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const elapsedMs = since(start);
  await boss.stop({ graceful: false });
  await checker.end();
  report(tracker.result(elapsedMs));
}

async function serve(spec: RunnerSpec): Promise<void> {
  const boss = await open(spec, { worker: true });
  const results = spec.backend === null ? null : new pg.Pool({ connectionString: spec.url, max: 2 });
  await boss.work<JobData>(spec.queue, workOptions(spec), async (jobs) => {
    await runBatch(spec, jobs, async (job) => {
      if (results) await results.query('SELECT pg_notify($1, $2)', [RESULT_CHANNEL, String(job.data.index)]);
      return job.data.index;
    });
  });
  announceReady();
  await new Promise(() => undefined);
}

async function roundTrip(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const boss = await open(spec, { worker: false });
  const listener = new pg.Client({ connectionString: spec.url });
  await listener.connect();
  const waiting = new Map<number, (value: number) => void>();
  listener.on('notification', (message) => {
    const index = Number(message.payload);
    waiting.get(index)?.(index);
    waiting.delete(index);
  });
  await listener.query(`LISTEN ${RESULT_CHANNEL}`);
  const result = await measureRoundTrips(spec.n, async (index) => {
    const done = new Promise<number>((resolve) => waiting.set(index, resolve));
    await boss.send(spec.queue, { index });
    return done;
  });
  await listener.end();
  await boss.stop({ graceful: false });
  report(result);
}

async function load(spec: RunnerSpec): Promise<void> {
  const boss = await open(spec, { worker: false });
  await publishSteadily(spec.ratePerSecond ?? 1000, spec.n, (indexes) => boss.insert(spec.loadQueue ?? spec.queue, indexes.map((index) => ({ data: { index } }))));
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
