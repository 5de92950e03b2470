// One run of one case: clean broker state, the runner processes the workload needs, the measurement, and the
// completeness checks (nothing lost, nothing left unacked) — all read back from the broker.
import { setTimeout as sleep } from 'node:timers/promises';
import { POSTGRES_STATS_SETTLE_MS, type AmqpAdmin, type Leftover, type PostgresAdmin, type PostgresReading, type RedisAdmin } from './broker-admin';
import { LOAD_RATE, queueName, type BenchCase } from './cases';
import { READY_LINE, STARTING_PREFIX, celeryNodeTaskId, type DrainResult, type Role, type RunnerResult, type RunnerSpec } from './protocol';
import { RunnerProcess } from './runner-process';
import { processTreeCpuUs, processTreeRssBytes, sampleRssPeak } from './process-tree';
import { percentile } from './stats';
import { postgresUrlFor, runnerCommand } from './systems';

export interface RunSettings {
  /** Tasks per W1/W2 run. */
  n: number;
  /** Sequential round trips per W3 run. */
  roundTrips: number;
  batch: number;
  urls: { redis: string; amqp: string; postgres: string };
  /** Longest a single step (fill, drain, the round trips...) may take. */
  stepTimeoutMs: number;
  redis: RedisAdmin | null;
  amqp: AmqpAdmin | null;
  postgres: PostgresAdmin | null;
}

/** What one run measured: a rate (W1, W2) or latency percentiles (W3). */
export type RunMeasurement =
  | {
      kind: 'rate';
      perSecond: number;
      /** W2: CPU of the worker process(es) per task, µs; W1: of the producer. */
      workerCpuUs?: number;
      /**
       * W1, W2: the broker's CPU per task, µs — Redis: its command time (`INFO commandstats`); RabbitMQ: its Erlang
       * VM's CPU from /proc, when it runs on this machine.
       */
      brokerCpuUs?: number;
      /** W2: resident memory of the worker process(es) waiting for work, and the most seen during the drain, MiB. */
      rssIdleMiB?: number;
      rssPeakMiB?: number;
      /** W1 on Redis: bytes the broker holds per queued task (what one task costs to write, store and read). */
      bytesPerTask?: number;
      /** W1, W2 on Redis: Redis's calls and µs per task, command by command. */
      redisCommands?: Record<string, { calls: number; usec: number }>;
      /** W1, W2 on Redis: the redis-server process's CPU per task over the window, µs (see RedisAdmin.processCpuUs). */
      redisProcessCpuUs?: number;
    } & PostgresCosts
  | {
      kind: 'latency';
      p50: number;
      p99: number;
      /** On Redis: Redis's calls and µs per round trip, command by command (the serving worker's idle polls included). */
      redisCommands?: Record<string, { calls: number; usec: number }>;
      /** On Redis: the redis-server process's CPU per round trip, µs. */
      redisProcessCpuUs?: number;
    } & PostgresCosts
  | {
      /** W4: tasks/s of all processes together, their CPU and Redis's per task, and how busy Redis was. */
      kind: 'scale';
      perSecond: number;
      workerCpuUs: number | null;
      brokerCpuUs: number | null;
      /** Redis's command time over the drain's wall time (1 = one core busy all the time: Redis is the limit). */
      redisBusy: number | null;
    }
  | {
      /** W5: RSS of a started worker waiting on an empty queue, and the most seen while it drained N tasks, MiB. */
      kind: 'memory';
      idleMiB: number | null;
      peakMiB: number | null;
      /** Worker CPU per task over the drain (from /proc, for every system alike), µs. */
      workerCpuUs: number | null;
    } & PostgresCosts;

/**
 * On PostgreSQL, what the database owner pays per task (per round trip in W3) over the measured window: the
 * server's CPU (`brokerCpuUs`), the WAL it wrote, and the transactions committed in the system's database — the
 * whole server's CPU and WAL (the shared machine's other users included), the commits of that database alone.
 */
export interface PostgresCosts {
  brokerCpuUs?: number;
  walBytesPerTask?: number;
  commitsPerTask?: number;
}

/** A failed completeness check or a runner that misbehaved: the message says what and where. */
export class RunFailure extends Error {
  override name = 'RunFailure';
}

const POLL_MS = 5;
/** W6: how long the background load runs before the round trips start. */
const LOAD_WARMUP_MS = 1000;
/** Runners give up at the step timeout and say how far they got; the orchestrator waits this much longer to hear it. */
const RESULT_GRACE_MS = 5000;

export async function runCase(c: BenchCase, settings: RunSettings): Promise<RunMeasurement> {
  const runners: RunnerProcess[] = [];
  const start = (role: Role, n: number): RunnerProcess => {
    const runner = RunnerProcess.start(runnerCommand(c.system, specFor(c, role, n, settings), `${c.label} [${role}${runners.length > 0 ? ` #${runners.length + 1}` : ''}, ${c.broker}]`));
    runners.push(runner);
    return runner;
  };
  try {
    await reset(c, settings);
    if (c.workload === 'W1') return await enqueue(c, settings, start);
    if (c.workload === 'W2') return await drain(c, settings, start);
    if (c.workload === 'W4') return await scale(c, settings, start);
    if (c.workload === 'W5') return await memory(c, settings, start);
    return await roundTrip(c, settings, start);
  } finally {
    await Promise.all(runners.map((runner) => runner.stop()));
    if (c.system === 'celery-node' && c.workload === 'W3' && c.broker === 'amqp') {
      const names = Array.from({ length: settings.roundTrips }, (_, index) => celeryNodeTaskId(index).replace(/-/g, ''));
      await settings.amqp?.deleteQueues(names);
    }
  }
}

type Start = (role: Role, n: number) => RunnerProcess;

async function enqueue(c: BenchCase, settings: RunSettings, start: Start): Promise<RunMeasurement> {
  const redis = c.broker === 'redis' ? settings.redis : null;
  await redis?.resetStats();
  const redisProcess = await redisProcessWindow(redis);
  const rabbit = c.broker === 'amqp' ? settings.amqp : null;
  const rabbitAtStart = rabbit?.brokerCpuUs() ?? null;
  const postgres = await postgresWindow(c, settings);
  const result = expect(await start('enqueue', settings.n).result(settings.stepTimeoutMs + RESULT_GRACE_MS), 'enqueue', c);
  const redisProcessUs = await redisProcess(settings.n);
  const rabbitAtEnd = rabbit?.brokerCpuUs() ?? null;
  const postgresCosts = (await postgres?.(settings.n)) ?? {};
  const commands = redis ? perTask(await redis.commandStats(), settings.n) : null;
  const brokerUs = redis
    ? Object.values(commands ?? {}).reduce((sum, stat) => sum + stat.usec, 0)
    : rabbitAtStart !== null && rabbitAtEnd !== null
      ? (rabbitAtEnd - rabbitAtStart) / settings.n
      : null;
  await waitForQueued(c, settings, settings.n, 'after publishing');
  const bytes = redis ? await redis.bytesPerTask(c.system, queueName(c)) : null;
  return {
    kind: 'rate',
    perSecond: settings.n / (result.elapsedMs / 1000),
    ...(result.cpuUs === undefined ? {} : { workerCpuUs: result.cpuUs / settings.n }),
    ...(brokerUs === null ? {} : { brokerCpuUs: brokerUs }),
    ...(bytes === null ? {} : { bytesPerTask: bytes }),
    ...(commands === null ? {} : { redisCommands: commands }),
    ...redisProcessUs,
    ...postgresCosts,
  };
}

async function drain(c: BenchCase, settings: RunSettings, start: Start): Promise<RunMeasurement> {
  const filler = start('fill', settings.n);
  // A Node worker process starts loading now and waits for GO; Python's worker is the celery command itself, so it
  // is started once the queue is full.
  const early = c.system === 'python-celery' ? null : start('drain', settings.n);
  const fill = expect(await filler.result(settings.stepTimeoutMs + RESULT_GRACE_MS), 'enqueue', c);
  if (fill.published !== settings.n) throw new RunFailure(`${c.label}: the fill published ${fill.published} of ${settings.n} tasks.`);
  await waitForQueued(c, settings, settings.n, 'before the worker started');

  const redis = c.broker === 'redis' ? settings.redis : null;
  await redis?.resetStats();
  const redisProcess = await redisProcessWindow(redis);
  const rabbit = c.broker === 'amqp' ? settings.amqp : null;
  const rabbitAtStart = rabbit?.brokerCpuUs() ?? null;
  let result: DrainResult;
  let memory: { idle: number | null; peak: number | null };
  const postgres = await postgresWindow(c, settings);
  if (early) {
    const idle = processTreeRssBytes(early.pid);
    const peak = sampleRssPeak(early.pid, idle);
    early.go();
    result = expect(await early.result(settings.stepTimeoutMs + RESULT_GRACE_MS), 'drain', c);
    memory = { idle, peak: peak.stop() };
  } else {
    const worker = start('drain', settings.n);
    const watched = await drainWatchedAtBroker(c, settings, worker);
    result = watched.result;
    memory = watched.memory;
    await worker.stop();
  }
  const redisProcessUs = await redisProcess(settings.n);
  const rabbitAtEnd = rabbit?.brokerCpuUs() ?? null;
  const postgresCosts = (await postgres?.(settings.n)) ?? {};
  const redisUsec = redis ? await redis.commandUsec() : rabbitAtStart !== null && rabbitAtEnd !== null ? rabbitAtEnd - rabbitAtStart : null;
  const commands = redis ? perTask(await redis.commandStats(), settings.n) : null;

  if (result.distinct !== settings.n) {
    throw new RunFailure(`${c.label}: ${settings.n - result.distinct} of ${settings.n} tasks never completed (lost).`);
  }
  if (result.processed !== settings.n) {
    throw new RunFailure(`${c.label}: ${result.processed - settings.n} task runs were duplicates (redelivered while the first delivery was still held).`);
  }
  const left = await leftover(c, settings);
  if (left.queued !== 0 || left.unacked !== 0 || left.failed !== 0) {
    throw new RunFailure(`${c.label}: after the drain the broker still holds ${describeLeftover(left)}.`);
  }
  return {
    kind: 'rate',
    perSecond: settings.n / (result.elapsedMs / 1000),
    ...(result.cpuUs === undefined ? {} : { workerCpuUs: result.cpuUs / settings.n }),
    ...(redisUsec === null ? {} : { brokerCpuUs: redisUsec / settings.n }),
    ...(memory.idle === null ? {} : { rssIdleMiB: memory.idle / MIB }),
    ...(memory.peak === null ? {} : { rssPeakMiB: memory.peak / MIB }),
    ...(commands === null ? {} : { redisCommands: commands }),
    ...redisProcessUs,
    ...postgresCosts,
  };
}

/** Command statistics divided by the tasks, leaving out the orchestrator's own polling (LLEN, HLEN, INFO, ...). */
function perTask(stats: Record<string, { calls: number; usec: number }>, n: number): Record<string, { calls: number; usec: number }> {
  const ADMIN = new Set(['llen', 'hlen', 'info', 'config|resetstat', 'zcard', 'scard', 'ping', 'select', 'client|setname', 'client|setinfo']);
  const out: Record<string, { calls: number; usec: number }> = {};
  for (const [command, { calls, usec }] of Object.entries(stats)) if (!ADMIN.has(command)) out[command] = { calls: calls / n, usec: usec / n };
  return out;
}

const MIB = 1024 * 1024;

/**
 * Python Celery's worker cannot report its own last ack, so its drain is timed from the worker's `worker_init`
 * signal (printed with its clock) to the moment the broker holds neither queued nor unacked messages, polled every
 * 5 ms and confirmed by a second look (a message is briefly in neither place between BRPOP and its unacked record).
 */
async function drainWatchedAtBroker(
  c: BenchCase,
  settings: RunSettings,
  worker: RunnerProcess,
): Promise<{ result: DrainResult; memory: { idle: number | null; peak: number | null } }> {
  const starting = await worker.waitForLine((line) => line.startsWith(STARTING_PREFIX), settings.stepTimeoutMs, 'starting');
  const startedAt = Number(starting.line.slice(STARTING_PREFIX.length));
  // Python's worker reports nothing of its own: its CPU and memory (prefork children included) are read from /proc.
  // It starts on a full queue, so its "idle" memory is what it holds at its start signal.
  const cpuAtStart = processTreeCpuUs(worker.pid);
  const idle = processTreeRssBytes(worker.pid);
  const peak = sampleRssPeak(worker.pid, idle);
  const deadline = Date.now() + settings.stepTimeoutMs;
  let emptySince: number | null = null;
  for (;;) {
    const left = await leftover(c, settings);
    if (left.queued === 0 && left.unacked === 0) {
      if (emptySince !== null) {
        const cpuAtEnd = processTreeCpuUs(worker.pid);
        const cpu = cpuAtStart !== null && cpuAtEnd !== null ? { cpuUs: cpuAtEnd - cpuAtStart } : {};
        return {
          result: { kind: 'drain', elapsedMs: emptySince - startedAt, processed: settings.n, distinct: settings.n, ...cpu },
          memory: { idle, peak: peak.stop() },
        };
      }
      emptySince = Date.now();
    } else {
      emptySince = null;
    }
    if (Date.now() > deadline) {
      peak.stop();
      throw new RunFailure(`${c.label}: the drain did not finish within ${settings.stepTimeoutMs / 1000} s; the broker still holds ${describeLeftover(left)}. Worker output:\n${worker.tail()}`);
    }
    await sleep(POLL_MS);
  }
}

/**
 * W4: `c.processes` worker processes drain one queue together. None of them can tell when the queue is done, so the
 * orchestrator times it: from GO to the broker holding nothing queued or unacked (polled every 5 ms, confirmed by a
 * second look); then each process is told to stop and reports the indexes it completed, merged to check that every
 * task ran exactly once. Redis's command time over the wall time says how close Redis came to being the limit.
 */
async function scale(c: BenchCase, settings: RunSettings, start: Start): Promise<RunMeasurement> {
  const filler = start('fill', settings.n);
  const workers = Array.from({ length: c.processes }, () => start('drain', settings.n));
  const fill = expect(await filler.result(settings.stepTimeoutMs + RESULT_GRACE_MS), 'enqueue', c);
  if (fill.published !== settings.n) throw new RunFailure(`${c.label}: the fill published ${fill.published} of ${settings.n} tasks.`);
  await waitForQueued(c, settings, settings.n, 'before the workers started');
  await settings.redis?.resetStats();
  const startedAt = Date.now();
  for (const worker of workers) worker.go();
  const endedAt = await waitForEmpty(c, settings, 'the drain');
  const redisUsec = settings.redis ? await settings.redis.commandUsec() : null;
  for (const worker of workers) worker.stopDrain();
  const results = await Promise.all(workers.map(async (worker) => expect(await worker.result(settings.stepTimeoutMs + RESULT_GRACE_MS), 'drain', c)));
  const { distinct, processed } = mergeShared(results, settings.n);
  if (distinct !== settings.n) throw new RunFailure(`${c.label}: ${settings.n - distinct} of ${settings.n} tasks never completed (lost).`);
  if (processed !== settings.n) throw new RunFailure(`${c.label}: ${processed - settings.n} task runs were duplicates.`);
  const left = await leftover(c, settings);
  if (left.failed !== 0) throw new RunFailure(`${c.label}: after the drain the broker still holds ${describeLeftover(left)}.`);
  const elapsedMs = Math.max(1, endedAt - startedAt);
  const cpu = results.every((result) => result.cpuUs !== undefined) ? results.reduce((sum, result) => sum + (result.cpuUs ?? 0), 0) : null;
  return {
    kind: 'scale',
    perSecond: settings.n / (elapsedMs / 1000),
    workerCpuUs: cpu === null ? null : cpu / settings.n,
    brokerCpuUs: redisUsec === null ? null : redisUsec / settings.n,
    redisBusy: redisUsec === null ? null : redisUsec / (elapsedMs * 1000),
  };
}

/** Distinct indexes completed by all the processes of a shared drain (their bitmaps OR-ed), and runs in total. */
export function mergeShared(results: readonly DrainResult[], n: number): { distinct: number; processed: number } {
  const all = new Uint8Array(Math.ceil(n / 8));
  let processed = 0;
  for (const result of results) {
    processed += result.processed;
    const bits = Buffer.from(result.seen ?? '', 'base64');
    for (let byte = 0; byte < all.length; byte++) all[byte] = (all[byte] ?? 0) | (bits[byte] ?? 0);
  }
  let distinct = 0;
  for (let index = 0; index < n; index++) if (((all[index >> 3] ?? 0) >> (index & 7)) & 1) distinct++;
  return { distinct, processed };
}

/** How long a started worker waits on its empty queue before its idle memory is read: start-up garbage settles. */
const IDLE_SETTLE_MS = 1000;

/**
 * W5: a worker started the way W3 starts one (Python prefork with its pool children up), left waiting on an empty
 * queue, its RSS read once it settled (idle); then a producer publishes N tasks and the worker drains them while its
 * RSS is sampled every 50 ms (peak). Every system is read from /proc the same way, children included.
 */
async function memory(c: BenchCase, settings: RunSettings, start: Start): Promise<RunMeasurement> {
  const worker = start('serve', settings.n);
  await worker.waitForLine((line) => line.split(' ')[0] === READY_LINE, settings.stepTimeoutMs, 'the worker becoming ready');
  await sleep(IDLE_SETTLE_MS);
  const idle = processTreeRssBytes(worker.pid);
  const cpuAtStart = processTreeCpuUs(worker.pid);
  const peak = sampleRssPeak(worker.pid, idle);
  const postgres = await postgresWindow(c, settings);
  try {
    const fill = expect(await start('fill', settings.n).result(settings.stepTimeoutMs + RESULT_GRACE_MS), 'enqueue', c);
    if (fill.published !== settings.n) throw new RunFailure(`${c.label}: the producer published ${fill.published} of ${settings.n} tasks.`);
    await waitForEmpty(c, settings, 'the drain');
  } finally {
    peak.stop();
  }
  const cpuAtEnd = processTreeCpuUs(worker.pid);
  const postgresCosts = (await postgres?.(settings.n)) ?? {};
  const left = await leftover(c, settings);
  if (left.failed !== 0) throw new RunFailure(`${c.label}: after the drain the broker still holds ${describeLeftover(left)}.`);
  const peakBytes = peak.stop();
  return {
    kind: 'memory',
    idleMiB: idle === null ? null : idle / MIB,
    peakMiB: peakBytes === null ? null : peakBytes / MIB,
    workerCpuUs: cpuAtStart !== null && cpuAtEnd !== null ? (cpuAtEnd - cpuAtStart) / settings.n : null,
    ...postgresCosts,
  };
}

/**
 * When the broker holds nothing queued or unacked, seen twice in a row 5 ms apart (a message is briefly in neither
 * place between its pop and its unacked record): the epoch ms of the first look.
 */
async function waitForEmpty(c: BenchCase, settings: RunSettings, what: string): Promise<number> {
  const deadline = Date.now() + settings.stepTimeoutMs;
  let emptySince: number | null = null;
  for (;;) {
    const left = await leftover(c, settings);
    if (left.queued === 0 && left.unacked === 0) {
      if (emptySince !== null) return emptySince;
      emptySince = Date.now();
    } else {
      emptySince = null;
    }
    if (Date.now() > deadline) throw new RunFailure(`${c.label}: ${what} did not finish within ${settings.stepTimeoutMs / 1000} s; the broker still holds ${describeLeftover(left)}.`);
    await sleep(POLL_MS);
  }
}

async function roundTrip(c: BenchCase, settings: RunSettings, start: Start): Promise<RunMeasurement> {
  const worker = start('serve', settings.roundTrips);
  const producer = start('roundtrip', settings.roundTrips);
  await worker.waitForLine((line) => line.split(' ')[0] === READY_LINE, settings.stepTimeoutMs, 'the worker becoming ready');
  if (c.workload === 'W6') {
    // The background producer starts with the worker up and gets a second to reach its rate before the clock runs.
    start('load', settings.roundTrips);
    await sleep(LOAD_WARMUP_MS);
  }
  const redis = c.broker === 'redis' && c.workload === 'W3' ? settings.redis : null;
  await redis?.resetStats();
  const redisProcess = await redisProcessWindow(redis);
  const postgres = c.workload === 'W3' ? await postgresWindow(c, settings) : null;
  producer.go();
  const result = expect(await producer.result(settings.stepTimeoutMs + RESULT_GRACE_MS), 'roundtrip', c);
  const redisProcessUs = await redisProcess(settings.roundTrips);
  const postgresCosts = (await postgres?.(settings.roundTrips)) ?? {};
  if (result.latenciesMs.length !== settings.roundTrips) {
    throw new RunFailure(`${c.label}: ${result.latenciesMs.length} of ${settings.roundTrips} round trips completed.`);
  }
  if (result.wrong !== 0) throw new RunFailure(`${c.label}: ${result.wrong} round trips returned the wrong result.`);
  const commands = redis ? perTask(await redis.commandStats(), settings.roundTrips) : null;
  return {
    kind: 'latency',
    p50: percentile(result.latenciesMs, 50),
    p99: percentile(result.latenciesMs, 99),
    ...(commands === null ? {} : { redisCommands: commands }),
    ...redisProcessUs,
    ...postgresCosts,
  };
}

/**
 * On Redis, opens a window on the redis-server process's CPU: the returned function closes it and gives the CPU per
 * task over `tasks` (nothing when the server's process cannot be read here).
 */
async function redisProcessWindow(redis: RedisAdmin | null): Promise<(tasks: number) => Promise<{ redisProcessCpuUs?: number }>> {
  const before = redis ? await redis.processCpuUs() : null;
  return async (tasks) => {
    const after = before === null || !redis ? null : await redis.processCpuUs();
    return after === null || before === null ? {} : { redisProcessCpuUs: (after - before) / tasks };
  };
}

function specFor(c: BenchCase, role: Role, n: number, settings: RunSettings): RunnerSpec {
  const url = c.broker === 'postgres' ? postgresUrlFor(settings.urls.postgres, c.system) : settings.urls[c.broker];
  return {
    role,
    broker: c.broker,
    url,
    backend: backendFor(c, role, settings),
    queue: queueName(c),
    n,
    mode: c.mode,
    concurrency: c.concurrency,
    batch: settings.batch,
    variant: c.variant,
    timeoutMs: settings.stepTimeoutMs,
    ...(c.workload === 'W4' && role === 'drain' ? { shared: true } : {}),
    ...(c.workload === 'W6' ? { loadQueue: `${queueName(c)}.load`, ratePerSecond: LOAD_RATE } : {}),
  };
}

/**
 * Round trips store results where Celery users would: the Redis backend next to a Redis broker, the PostgreSQL one next to PostgreSQL, rpc:// (replies over
 * the broker) next to RabbitMQ — celery.node has no rpc://; its amqp:// backend is the same idea. Drains store none,
 * except celery.node's worker, which cannot run without a backend: it gets Redis, its cheaper one.
 */
function backendFor(c: BenchCase, role: Role, settings: RunSettings): string | null {
  // W5's worker drains like W2's (no results); W6's load is fire-and-forget.
  if (c.workload === 'W5' || role === 'load') return null;
  if (role === 'serve' || role === 'roundtrip') {
    if (c.broker === 'redis') return settings.urls.redis;
    if (c.broker === 'postgres') return postgresUrlFor(settings.urls.postgres, c.system);
    return c.system === 'kq' ? 'rpc://' : settings.urls.amqp;
  }
  if (role === 'drain' && c.system === 'celery-node') return settings.urls.redis;
  return null;
}

/**
 * On PostgreSQL, opens a measured window: the returned function closes it and gives the costs per task over `tasks`.
 * Server CPU and WAL are read at once; the commit count once the backends' statistics have reached the server.
 */
async function postgresWindow(c: BenchCase, settings: RunSettings): Promise<((tasks: number) => Promise<PostgresCosts>) | null> {
  const admin = c.broker === 'postgres' ? settings.postgres : null;
  if (!admin) return null;
  const before = await admin.read(c.system);
  return async (tasks) => {
    const after = await admin.read(c.system);
    await sleep(POSTGRES_STATS_SETTLE_MS);
    const settled = await admin.read(c.system);
    return postgresCosts(before, { ...after, commits: settled.commits }, tasks);
  };
}

/** Costs per task between two readings. */
export function postgresCosts(before: PostgresReading, after: PostgresReading, tasks: number): PostgresCosts {
  return {
    ...(before.cpuUs === null || after.cpuUs === null ? {} : { brokerCpuUs: (after.cpuUs - before.cpuUs) / tasks }),
    walBytesPerTask: (after.walBytes - before.walBytes) / tasks,
    commitsPerTask: (after.commits - before.commits) / tasks,
  };
}

async function reset(c: BenchCase, settings: RunSettings): Promise<void> {
  if (c.broker === 'redis') {
    if (!settings.redis) throw new RunFailure('Redis is not connected.');
    await settings.redis.flush();
  } else if (c.broker === 'postgres') {
    if (!settings.postgres) throw new RunFailure('PostgreSQL is not connected.');
    await settings.postgres.purge(c.system, queueName(c));
  } else {
    if (!settings.amqp) throw new RunFailure('RabbitMQ is not connected.');
    await settings.amqp.purge(queueName(c));
  }
}

async function leftover(c: BenchCase, settings: RunSettings): Promise<Leftover> {
  if (c.broker === 'redis') {
    if (!settings.redis) throw new RunFailure('Redis is not connected.');
    return settings.redis.leftover(c.system, queueName(c));
  }
  if (c.broker === 'postgres') {
    if (!settings.postgres) throw new RunFailure('PostgreSQL is not connected.');
    return settings.postgres.leftover(c.system, queueName(c));
  }
  if (!settings.amqp) throw new RunFailure('RabbitMQ is not connected.');
  return settings.amqp.leftover(queueName(c));
}

/** Waits until the broker holds exactly `n` queued messages (publishers without confirms may still be in flight). */
async function waitForQueued(c: BenchCase, settings: RunSettings, n: number, when: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  let left = await leftover(c, settings);
  while (left.queued < n && Date.now() < deadline) {
    await sleep(20);
    left = await leftover(c, settings);
  }
  if (left.queued !== n) throw new RunFailure(`${c.label}: the broker holds ${left.queued} of ${n} published tasks ${when}.`);
}

function describeLeftover(left: Leftover): string {
  return `${left.queued} queued, ${left.unacked} unacked, ${left.failed} failed`;
}

function expect<K extends RunnerResult['kind']>(result: RunnerResult, kind: K, c: BenchCase): Extract<RunnerResult, { kind: K }> {
  if (result.kind !== kind) throw new RunFailure(`${c.label}: expected a ${kind} result, got ${result.kind}.`);
  return result as Extract<RunnerResult, { kind: K }>;
}
