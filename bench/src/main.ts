// The side-by-side benchmark (issue #8): kq next to BullMQ, bee-queue, celery.node, Python Celery and the raw
// drivers, each in its own process, on the same Redis and RabbitMQ, in one run.
//
//   pnpm bench                      full run → bench/RESULTS.md + bench/results.svg
//   pnpm bench:smoke                every case once with N = 200: completeness only, never a time (CI)
//   pnpm bench -- --help            flags (--only, --systems, --workloads, --n, --runs, ...)
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AmqpAdmin, PostgresAdmin, RedisAdmin } from './broker-admin';
import { selectCases, WORKLOAD_TITLES, type BenchCase } from './cases';
import { parseOptions, USAGE, type BenchOptions } from './cli';
import { collectMachineInfo, loadAverage } from './machine-info';
import { figures, type CaseOutcome } from './outcome';
import { renderMarkdown } from './report/markdown';
import { renderSvg } from './report/svg';
import { redisHotPathTargets } from './report/redis-hot-targets';
import { checkTargets } from './report/targets';
import { formatMs, formatRate } from './report/format';
import { BATCH } from './cases';
import { runExtras } from './extras';
import { runCase, type RunMeasurement, type RunSettings } from './run-case';
import { installExitHooks } from './runner-process';
import { acquireRunLock } from './run-lock';
import { BENCH_DIR, kqBuild, PYTHON, useCompiledRunners } from './systems';
import { compileRunners } from './compile-runners';
import { execFile } from 'node:child_process';

const RESULTS_FILE = 'RESULTS.md';
/** Written by `pnpm bench:soak` (src/soak.ts); RESULTS.md shows it under PostgreSQL. */
const SOAK_FILE = 'SOAK.md';
const CHART_FILE = 'results.svg';
const required = process.env['KQ_REQUIRE_BROKERS'] === '1';
/** A case whose first run takes longer than this runs only once (the issue allows fewer runs for very slow systems). */
const SLOW_RUN_S = 150;

async function main(): Promise<number> {
  installExitHooks();
  const options = parseOptions(process.argv.slice(2));
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  acquireRunLock(options.smoke ? 'pnpm bench:smoke' : commandLine(options));
  const started = Date.now();
  let cases = selectCases({ brokers: options.brokers, systems: options.systems, workloads: options.workloads });
  const needsRedis = cases.some((c) => c.broker === 'redis' || (c.system === 'celery-node' && c.workload === 'W2'));
  const redis = needsRedis ? await openOrSkip('Redis', () => RedisAdmin.open(options.redisUrl)) : null;
  const amqp = cases.some((c) => c.broker === 'amqp') ? await openOrSkip('RabbitMQ', () => AmqpAdmin.open(options.amqpUrl)) : null;
  const postgres = cases.some((c) => c.broker === 'postgres') ? await openOrSkip('PostgreSQL', () => PostgresAdmin.open(options.postgresUrl)) : null;
  cases = cases.filter(
    (c) =>
      (c.broker === 'redis' || (c.system === 'celery-node' && c.workload === 'W2') ? redis !== null : true) &&
      (c.broker === 'amqp' ? amqp !== null : true) &&
      (c.broker === 'postgres' ? postgres !== null : true),
  );
  if (cases.some((c) => c.system === 'python-celery') && !(await pythonCeleryAvailable())) {
    cases = cases.filter((c) => c.system !== 'python-celery');
  }
  if (cases.length === 0) {
    process.stderr.write('Nothing to run: no case is left after the flags and the broker checks above.\n');
    return 1;
  }

  // Runners run as compiled JavaScript once kq is built (see compile-runners.ts); from kq's sources, under tsx.
  if (kqBuild().built) useCompiledRunners(await compileRunners());
  const machine = options.write ? await collectMachineInfo({ redis: (await redis?.version()) ?? 'not used', rabbitmq: amqp?.version ?? 'not used', postgres: (await postgres?.version()) ?? 'not used' }) : null;
  const settings: RunSettings = {
    n: options.n,
    roundTrips: options.roundTrips,
    batch: BATCH,
    urls: { redis: options.redisUrl, amqp: options.amqpUrl, postgres: options.postgresUrl },
    // Generous: celery.node's awaited publish to RabbitMQ (a queue declaration per message) runs at ~100/s on a busy machine.
    stepTimeoutMs: options.smoke ? 30_000 : 60_000 + options.n * 30 + options.roundTrips * 30,
    redis,
    amqp,
    postgres,
  };
  process.stdout.write(
    options.smoke
      ? `Smoke run: ${cases.length} cases, N = ${options.n}, ${options.roundTrips} round trips; checking completeness only.\n`
      : `${cases.length} cases × ${options.runs} runs, N = ${options.n}, ${options.roundTrips} round trips.\n`,
  );

  let outcomes: CaseOutcome[] = [];
  try {
    if (options.smoke) {
      // Nothing is timed, so the Redis and RabbitMQ cases run side by side (each broker's cases still one at a time).
      const lanes = await Promise.all(
        (['redis', 'amqp', 'postgres'] as const).map(async (broker) => {
          const lane: CaseOutcome[] = [];
          for (const c of cases.filter((candidate) => candidate.broker === broker)) lane.push(await runAll(c, options, settings));
          return lane;
        }),
      );
      outcomes = cases.map((c) => lanes.flat().find((outcome) => outcome.case === c) as CaseOutcome);
    } else {
      outcomes = await runInterleaved(cases, options, settings);
    }
  } finally {
    await redis?.flush().catch(() => undefined);
    await redis?.close();
    await amqp?.close();
    await postgres?.close();
  }

  const extras = options.extras
    ? await runExtras({ n: options.n, runs: options.runs, redisUrl: options.redisUrl, amqpUrl: options.amqpUrl, timeoutMs: settings.stepTimeoutMs * 4 })
    : [];
  const failed = outcomes.filter((o) => o.failures.length > 0);
  const seconds = (Date.now() - started) / 1000;
  if (options.smoke) {
    process.stdout.write(
      failed.length === 0
        ? `\nSmoke run passed: ${outcomes.length} cases, every task completed and acked (${Math.round(seconds)} s).\n`
        : `\nSmoke run FAILED: ${failed.length} of ${outcomes.length} cases:\n${failed.map((o) => `  - ${describe(o.case)}: ${o.failures[0]}`).join('\n')}\n`,
    );
    return failed.length === 0 ? 0 : 1;
  }

  process.stdout.write('\nTargets (issues #22, #31 and #35):\n');
  for (const check of [...checkTargets(outcomes), ...redisHotPathTargets(outcomes)]) {
    process.stdout.write(`  [${check.met === null ? ' ? ' : check.met ? 'met' : 'NOT'}] ${check.goal}: ${check.measured.replace(/\*\*/g, '')}\n`);
    if (check.why) process.stdout.write(`        why: ${check.why}\n`);
  }
  if (machine && options.write) {
    machine.loadAfter = loadAverage();
    const command = commandLine(options);
    const markdown = renderMarkdown({
      outcomes,
      machine,
      command,
      n: options.n,
      roundTrips: options.roundTrips,
      runs: options.runs,
      durationS: seconds,
      chartFile: CHART_FILE,
      kqBuilt: kqBuild().built,
      extras,
      ...(existsSync(join(BENCH_DIR, SOAK_FILE)) ? { soak: await readFile(join(BENCH_DIR, SOAK_FILE), 'utf8') } : {}),
    });
    await writeFile(join(BENCH_DIR, RESULTS_FILE), markdown);
    await writeFile(join(BENCH_DIR, CHART_FILE), renderSvg(outcomes, `${machine.cpu}, ${machine.cores} cores · Node ${machine.node} · ${machine.date} · ${command}`));
    process.stdout.write(`\nWrote bench/${RESULTS_FILE} and bench/${CHART_FILE} (${Math.round(seconds / 60)} min).\n`);
  }
  if (failed.length > 0) {
    process.stdout.write(`\n${failed.length} case(s) failed:\n${failed.map((o) => `  - ${describe(o.case)}: ${o.failures[0]}`).join('\n')}\n`);
    return 1;
  }
  return 0;
}

/** Smoke: a case's runs one after another (there is one), stopping at the first failure. */
async function runAll(c: BenchCase, options: BenchOptions, settings: RunSettings): Promise<CaseOutcome> {
  const outcome: CaseOutcome = { case: c, runs: [], failures: [] };
  for (let run = 1; run <= options.runs && outcome.failures.length === 0; run++) await runOnce(outcome, run, options, settings);
  return outcome;
}

/**
 * Full runs: within each broker × workload group, run 1 of every case, then run 2 of every case, and so on — a burst
 * of load from elsewhere on the machine then lands on all systems alike instead of on one system's three runs.
 */
async function runInterleaved(cases: readonly BenchCase[], options: BenchOptions, settings: RunSettings): Promise<CaseOutcome[]> {
  const outcomes = cases.map((c): CaseOutcome => ({ case: c, runs: [], failures: [] }));
  const groups = new Map<string, CaseOutcome[]>();
  for (const outcome of outcomes) {
    const key = `${outcome.case.broker}.${outcome.case.workload}`;
    groups.set(key, [...(groups.get(key) ?? []), outcome]);
  }
  for (const group of groups.values()) {
    for (let run = 1; run <= options.runs; run++) {
      for (const outcome of group) {
        if (outcome.skipped) continue;
        const started = Date.now();
        // A failed run does not end its case: the next run may pass, and the report says how many failed.
        await runOnce(outcome, run, options, settings);
        const seconds = (Date.now() - started) / 1000;
        if (run === 1 && options.runs > 1 && seconds > SLOW_RUN_S) {
          outcome.skipped = `1 run only: it took ${Math.round(seconds)} s`;
          process.stdout.write(`        ${describe(outcome.case)}: ${outcome.skipped}; its other runs are skipped\n`);
        }
      }
    }
    for (const outcome of group) {
      const f = figures(outcome);
      if (!f) continue;
      const headline =
        f.kind === 'rate' || f.kind === 'scale'
          ? `${formatRate(f.rate.median)} tasks/s`
          : f.kind === 'latency'
            ? `p50 ${formatMs(f.p50.median)} ms, p99 ${formatMs(f.p99.median)} ms`
            : `RSS ${f.idleMiB?.median.toFixed(0) ?? '—'} MiB idle, ${f.peakMiB?.median.toFixed(0) ?? '—'} MiB peak`;
      process.stdout.write(`  median ${describe(outcome.case)}: ${headline}\n`);
    }
  }
  return outcomes;
}

async function runOnce(outcome: CaseOutcome, run: number, options: BenchOptions, settings: RunSettings): Promise<void> {
  const head = `${describe(outcome.case)}${options.runs > 1 ? ` run ${run}/${options.runs}` : ''}`;
  try {
    const measurement = await runCase(outcome.case, settings);
    outcome.runs.push(measurement);
    process.stdout.write(`  ok    ${head}${options.smoke ? '' : `: ${show(measurement)}`}\n`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    outcome.failures.push(message);
    process.stdout.write(`  FAIL  ${head}: ${message}\n`);
  }
}

function describe(c: BenchCase): string {
  return `${{ redis: 'Redis', amqp: 'RabbitMQ', postgres: 'PostgreSQL' }[c.broker]} ${WORKLOAD_TITLES[c.workload]}: ${c.label}`;
}

function show(measurement: RunMeasurement): string {
  const micros = (value: number | null | undefined, what: string): string => (value === undefined || value === null ? '' : `${what} ${value.toFixed(1)} µs/task`);
  // On PostgreSQL: what the server paid per task (per round trip in W3).
  const postgres =
    measurement.kind !== 'scale' && measurement.walBytesPerTask !== undefined
      ? `; PostgreSQL ${measurement.brokerCpuUs?.toFixed(0) ?? '?'} µs CPU, ${measurement.walBytesPerTask.toFixed(0)} WAL bytes, ${measurement.commitsPerTask?.toFixed(2) ?? '?'} commits per task`
      : '';
  if (measurement.kind === 'latency') return `p50 ${formatMs(measurement.p50)} ms, p99 ${formatMs(measurement.p99)} ms${postgres}`;
  if (measurement.kind === 'memory') {
    return `RSS ${measurement.idleMiB?.toFixed(0) ?? '—'} MiB idle, ${measurement.peakMiB?.toFixed(0) ?? '—'} MiB peak; ${micros(measurement.workerCpuUs, 'worker CPU')}${postgres}`;
  }
  const cpu = [micros(measurement.workerCpuUs, 'worker'), micros(measurement.brokerCpuUs, 'broker')].filter(Boolean);
  if (measurement.kind === 'scale') {
    const busy = measurement.redisBusy === null ? '' : `, Redis busy ${(measurement.redisBusy * 100).toFixed(0)}%`;
    return `${formatRate(measurement.perSecond)} tasks/s (CPU: ${cpu.join(', ')}${busy})`;
  }
  const rss = measurement.rssIdleMiB === undefined ? '' : `, RSS ${measurement.rssIdleMiB.toFixed(0)} / ${measurement.rssPeakMiB?.toFixed(0) ?? '—'} MiB idle / peak`;
  return `${formatRate(measurement.perSecond)} tasks/s${cpu.length > 0 ? ` (CPU: ${cpu.join(', ')})` : ''}${rss}${postgres}`;
}

/** The command that reproduces this run, as typed at the repository root. */
function commandLine(options: BenchOptions): string {
  const args = process.argv.slice(2).filter((arg) => arg !== '--');
  if (options.smoke) return 'pnpm bench:smoke';
  return args.length === 0 ? 'pnpm bench' : `pnpm bench -- ${args.join(' ')}`;
}

/** Opens a broker, or — unless KQ_REQUIRE_BROKERS=1 — says in one line why its cases are skipped. */
async function openOrSkip<T>(what: string, open: () => Promise<T>): Promise<T | null> {
  try {
    return await open();
  } catch (error) {
    const why = `${what} is not reachable (${error instanceof Error ? error.message : String(error)})`;
    if (required) throw new Error(`${why}; KQ_REQUIRE_BROKERS=1 makes this a failure. Start it and run again.`);
    process.stderr.write(`[bench] skipping the ${what} cases: ${why}. Set KQ_REQUIRE_BROKERS=1 to fail instead.\n`);
    return null;
  }
}

async function pythonCeleryAvailable(): Promise<boolean> {
  const error = await new Promise<string | undefined>((resolve) => {
    execFile(PYTHON, ['-c', 'import celery, kombu, redis'], { timeout: 20_000 }, (failure, _stdout, stderr) =>
      resolve(failure ? (stderr.trim().split('\n').pop() ?? failure.message) : undefined),
    );
  });
  if (!error) return true;
  const why = `${PYTHON} cannot import celery, kombu and redis (${error}); install Debian's python3-celery python3-redis`;
  if (required) throw new Error(`${why}; KQ_REQUIRE_BROKERS=1 makes this a failure.`);
  process.stderr.write(`[bench] skipping the Python Celery cases: ${why}.\n`);
  return false;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
