// graphile-worker 0.18: addJob / addJobs (bulk), run() with LISTEN wake-ups (its default), and the batching its
// performance docs recommend for throughput: a local queue (jobs fetched and locked in batches) and completions
// batched together (`completeJobBatchDelay: 0`: those of one event-loop turn, the window kq's acks batch over).
// The local queue holds as many jobs as kq prefetches (concurrency × 4). Jobs are deleted when they complete.
//
// Round trips: graphile-worker has no result waiting; the task NOTIFYs the producer with its result through
// `helpers.query`, and the producer LISTENs — the same path kq's PostgreSQL results take. The round-trip worker
// runs without a local queue or completion batching (each would only add latency to a lone job).
import pg from 'pg';
import { makeWorkerUtils, run, type Logger as LoggerType, type Runner, type Task } from 'graphile-worker';
import { Logger } from 'graphile-worker';
import { TASK_NAME, type RunnerSpec } from '../protocol';
import { announceReady, awaitGo, CompletionTracker, cpuSince, measureRoundTrips, publishSteadily, report, runMain, since } from './runner-kit';

interface JobPayload {
  index: number;
}

const RESULT_CHANNEL = 'kqbench_graphile_result';

/** Warnings and errors only (its info lines would be a line per job). */
const quiet: LoggerType = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') process.stderr.write(`graphile-worker ${level}: ${message}\n`);
});

async function enqueue(spec: RunnerSpec, timed: boolean): Promise<void> {
  const utils = await makeWorkerUtils({ connectionString: spec.url, logger: quiet });
  await utils.migrate();
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  if (spec.mode === 'awaited' && timed) {
    for (let index = 0; index < spec.n; index++) await utils.addJob(TASK_NAME, { index });
  } else {
    for (let at = 0; at < spec.n; at += spec.batch) {
      const jobs = [];
      for (let index = at; index < Math.min(spec.n, at + spec.batch); index++) jobs.push({ identifier: TASK_NAME, payload: { index } });
      await utils.addJobs(jobs);
    }
  }
  const elapsedMs = since(start);
  await utils.release();
  report({ kind: 'enqueue', elapsedMs, published: spec.n, cpuUs: cpuSince(cpuStart) });
}

function startWorker(spec: RunnerSpec, task: Task, batching: boolean): Promise<Runner> {
  return run({
    connectionString: spec.url,
    concurrency: spec.concurrency,
    // Its advice: 10 or concurrency + 2, whichever is larger.
    maxPoolSize: Math.max(10, spec.concurrency + 2),
    noHandleSignals: true,
    logger: quiet,
    taskList: { [TASK_NAME]: task },
    ...(batching ? { preset: { worker: { localQueue: { size: spec.concurrency * 4 }, completeJobBatchDelay: 0 } } } : {}),
  });
}

async function drain(spec: RunnerSpec): Promise<void> {
  const checker = new pg.Client({ connectionString: spec.url });
  await checker.connect();
  await awaitGo();
  const tracker = new CompletionTracker(spec.n);
  const start = performance.now();
  const runner = await startWorker(
    spec,
    async (payload) => {
      tracker.complete((payload as JobPayload).index);
    },
    true,
  );
  await tracker.done;
  // A job is deleted in a statement after its task returns (batched): the last one is over when the table is empty.
  for (;;) {
    const { rows } = await checker.query<{ open: string }>('SELECT count(*) AS open FROM graphile_worker._private_jobs');
    if (Number(rows[0]?.open ?? 1) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const elapsedMs = since(start);
  await runner.stop();
  await checker.end();
  report(tracker.result(elapsedMs));
}

async function serve(spec: RunnerSpec): Promise<void> {
  const notify = spec.backend !== null;
  await startWorker(
    spec,
    async (payload, helpers) => {
      const index = (payload as JobPayload).index;
      if (notify) await helpers.query('SELECT pg_notify($1, $2)', [RESULT_CHANNEL, String(index)]);
    },
    !notify,
  );
  announceReady();
  await new Promise(() => undefined);
}

async function roundTrip(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const utils = await makeWorkerUtils({ connectionString: spec.url, logger: quiet });
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
    await utils.addJob(TASK_NAME, { index });
    return done;
  });
  await listener.end();
  await utils.release();
  report(result);
}

async function load(spec: RunnerSpec): Promise<void> {
  const utils = await makeWorkerUtils({ connectionString: spec.url, logger: quiet });
  await publishSteadily(spec.ratePerSecond ?? 1000, spec.n, (indexes) => utils.addJobs(indexes.map((index) => ({ identifier: TASK_NAME, payload: { index } }))));
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
