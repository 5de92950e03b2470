/**
 * Celery's own integration suite against a kq worker, with a Python worker of the same version as the baseline.
 *
 *   pnpm test:celery-suite                                   # every version × broker, then docs/celery-suite.md
 *   pnpm test:celery-suite --versions 5.2.6 --brokers redis  # one pair, both workers
 *   pnpm test:celery-suite --versions 5.2.6 --files test_tasks.py -k retry --worker kq --no-write
 *   pnpm test:celery-suite --versions 5.6.3 --brokers amqp -k some_test --worker celery --update   # a targeted rerun, recorded
 *   pnpm test:celery-suite --report   # docs/celery-suite.md again from results.json
 *   pnpm test:celery-suite:ci   # CI: kq only, a quick selection, checked against the Python results recorded
 *
 * Upstream's files are read from ../shared/python/celery-integration, never copied into the repository.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { checkAgainstBaseline, rerunKeyword } from './baseline-check';
import { CELERY_VERSIONS, INTEGRATION_SUITES, REPO_ROOT, applicableFiles, celeryVersion, integrationSuiteFound, type BrokerKind, type CeleryVersion } from './celery-versions';
import { byTest, loadResults, mergeResults, renderReport, verdict, type PairResults } from './suite-report';
import { runSuite, type WorkerKind } from './suite-run';

const RESULTS_PATH = join(REPO_ROOT, 'celery-suite', 'results.json');
const REPORT_PATH = join(REPO_ROOT, 'docs', 'celery-suite.md');

const NOTES = [
  'How it runs: every version × broker × worker is its own run, with a private Redis server (results in database 0,',
  'the Redis broker in database 1) and, on RabbitMQ, its own vhost; the kq and Python runs of a pair, and the pairs, go',
  'at once (`--parallel`). Celery 5.5+ on RabbitMQ runs with quorum queues, a topic default exchange and publisher',
  'confirms (the native delayed-delivery ladder), for the client and both workers. Timings below were taken with 6 to 8',
  'runs at once on a 2-core machine shared with other work: compare the two workers of a pair, not pairs.',
  '',
  'Both workers run at concurrency 1, as Celery\'s pytest worker does, and outside pytest: tests that read or change',
  'the in-process worker\'s state (the stamping tests\' signal handlers, `worker_state.revoked_stamps.clear()`,',
  '`caplog` of the worker\'s log, `replaced_task_nesting` read in-process) fail on the Python worker too. pytest-rerunfailures',
  'is not installed, so upstream\'s `flaky` marks rerun nothing; tests that race the worker (`test_redis_subscribed_channels_leak`,',
  '`test_mutable_errback_called_by_chord_from_group_fail_multiple_on_body_failure`, 5.6\'s 20-second',
  '`test_revoked_by_headers_complex_canvas`, whose limit includes waiting for the worker to go idle) fail now on one',
  'worker, now on the other. What this machine lacks, for both workers: `test_security.py` of 5.5+ needs cryptography',
  '42 or later in the client (Debian 12 has 38: `not_valid_after_utc`); 5.5+\'s pydantic tasks need pydantic 2 in the',
  'Python worker (Debian has 1.10: `model_validate`), which kq does not need.',
  '',
  'Still failing on kq where Python passed: 5.6.3 × Redis `test_revoked_by_headers_complex_canvas`, a timing. Its 20-s',
  'limit covers the test and the teardown\'s wait until the worker is idle; each of its two rounds applies 11 canvases',
  'around one stamped `sleeping(4)` (revoked by stamped header, which kq now implements: every canvas raises',
  'TaskRevokedError on kq as on Python) and up to 15 unstamped `sleeping(2)` tasks. In the runs watched, kq ran 5 of',
  'those per round within the test and Python 3 (the rest still queued when the test ended), so kq took 20.1–20.8 s',
  'and Python 16.7 s. Tried: the stamps are now sent with stamped chord bodies and chain steps (kq ran the stamped task',
  'too before, 24 s); nothing was changed to slow kq\'s prefetch down to Python\'s pace. On 5.6.3 × RabbitMQ Python',
  'timed out on it as well.',
].join('\n');

const argv = process.argv.slice(2).filter((arg, index) => !(index === 0 && arg === '--'));
const { values } = parseArgs({
  args: argv,
  options: {
    versions: { type: 'string', default: CELERY_VERSIONS.map((v) => v.version).join(',') },
    brokers: { type: 'string', default: 'redis,amqp' },
    files: { type: 'string' },
    worker: { type: 'string', default: 'kq,celery' },
    k: { type: 'string' },
    // Runs at once: each has its own Redis server and vhost, and mostly waits on the other process.
    parallel: { type: 'string', default: '4' },
    // pytest-timeout's limit for one test, for a hang: upstream's slowest test waits out TimeoutErrors for ~150 s
    // (test_disabling_flag_allow_error_cb_on_chord_header), 5.2.6's immutable-errback tests ~120 s.
    timeout: { type: 'string', default: '300' },
    'no-write': { type: 'boolean', default: false },
    // kq only, nothing written: fail when kq fails a test the Python run recorded in results.json passed.
    check: { type: 'boolean', default: false },
    // With -k: lay the tests just run over the pair's recorded results (a targeted rerun), instead of writing nothing.
    update: { type: 'boolean', default: false },
    // Only write docs/celery-suite.md again from results.json.
    report: { type: 'boolean', default: false },
  },
});

interface Job {
  readonly celery: CeleryVersion;
  readonly broker: BrokerKind;
  readonly worker: WorkerKind;
  readonly files: readonly string[];
}

async function main(): Promise<void> {
  if (values.check) return check();
  if (values.report) {
    writeFileSync(REPORT_PATH, renderReport(loadResults(RESULTS_PATH), NOTES));
    console.log(`Wrote ${REPORT_PATH}`);
    return;
  }
  const versions = values.versions.split(',').map(celeryVersion);
  const brokers = values.brokers.split(',') as BrokerKind[];
  const workers = values.worker.split(',') as WorkerKind[];
  const parallel = Math.max(1, Number(values.parallel));
  const testTimeout = Number(values.timeout);
  const pairs = versions.flatMap((celery) => brokers.map((broker) => ({ celery, broker, files: values.files?.split(',') ?? applicableFiles(celery) })));
  const jobs: Job[] = pairs.flatMap((pair) => workers.map((worker) => ({ ...pair, worker })));
  console.log(`${jobs.length} runs, ${parallel} at a time`);
  const runs = await runAll(jobs, parallel, async (job) => {
    const ranAt = new Date().toISOString();
    const run = await runSuite({ ...job, keyword: values.k, testTimeout, log: (line) => console.log(line) });
    const results = byTest(run.outcomes);
    const passed = Object.values(results).filter((result) => result.outcome === 'passed').length;
    console.log(`Celery ${job.celery.version} × ${job.broker}, ${job.worker} worker: ${passed} of ${Object.keys(results).length} passed in ${Math.round(run.seconds)} s`);
    return { results, seconds: run.seconds, ranAt };
  });
  const fresh: PairResults[] = [];
  for (const { celery, broker, files } of pairs) {
    // A worker not run this time (--worker kq) keeps its last results for the pair, if they cover the same files.
    const previous = loadResults(RESULTS_PATH).find((pair) => pair.version === celery.version && pair.broker === broker && pair.files.join() === files.join());
    const seconds: Record<string, number> = {};
    const ranAtBy: Record<string, string> = {};
    // A worker run whole again makes its earlier targeted reruns moot.
    const rerunWhole = values.update ? [] : workers;
    const reruns = (previous?.reruns ?? []).filter((rerun) => !rerunWhole.some((worker) => rerun.includes(`, ${worker}: `)));
    const results: Record<WorkerKind, PairResults['kq']> = { kq: {}, celery: {} };
    for (const worker of ['kq', 'celery'] as const) {
      const index = jobs.findIndex((job) => job.celery === celery && job.broker === broker && job.worker === worker);
      const run = index >= 0 ? runs[index] : undefined;
      if (run && values.update && previous) {
        results[worker] = { ...previous[worker], ...run.results };
        seconds[worker] = previous.seconds[worker] ?? 0;
        ranAtBy[worker] = previous.ranAtBy?.[worker] ?? previous.ranAt;
        reruns.push(...Object.keys(run.results).map((test) => `${celery.version} × ${broker}, ${worker}: ${test.replace(/^t\/integration\//, '')} (${run.ranAt.slice(0, 16).replace('T', ' ')})`));
      } else if (run) {
        results[worker] = run.results;
        seconds[worker] = run.seconds;
        ranAtBy[worker] = run.ranAt;
      } else if (previous) {
        results[worker] = previous[worker];
        seconds[worker] = previous.seconds[worker] ?? 0;
        ranAtBy[worker] = previous.ranAtBy?.[worker] ?? previous.ranAt;
      }
    }
    const pair: PairResults = { version: celery.version, broker, files, ranAt: new Date().toISOString(), ranAtBy, ...(reruns.length > 0 ? { reruns } : {}), seconds, kq: results.kq, celery: results.celery };
    printVerdicts(pair);
    fresh.push(pair);
  }
  if (values['no-write'] || (values.k !== undefined && !values.update)) return;
  const merged = mergeResults(loadResults(RESULTS_PATH), fresh);
  writeFileSync(RESULTS_PATH, `${JSON.stringify(merged, null, 1)}\n`);
  writeFileSync(REPORT_PATH, renderReport(merged, NOTES));
  console.log(`Wrote ${REPORT_PATH}`);
}

/** `--check`: one pair, kq only, against the recorded baseline; prints pytest's style of closing line for CI. */
async function check(): Promise<void> {
  const [version, ...moreVersions] = values.versions.split(',');
  const [broker, ...moreBrokers] = values.brokers.split(',') as BrokerKind[];
  if (!version || !broker || moreVersions.length > 0 || moreBrokers.length > 0) throw new Error('--check runs one pair: give one --versions and one --brokers.');
  if (!integrationSuiteFound(version)) {
    console.log(`celery-suite check skipped: Celery's t/integration for ${version} is not at ${INTEGRATION_SUITES} (next to the repository, or KQ_CELERY_INTEGRATION).`);
    return;
  }
  const celery = celeryVersion(version);
  const files = values.files?.split(',') ?? applicableFiles(celery);
  const run = await runSuite({ celery, broker, worker: 'kq', files, keyword: values.k, testTimeout: Number(values.timeout), log: (line) => console.log(line) });
  const recorded = loadResults(RESULTS_PATH).find((pair) => pair.version === celery.version && pair.broker === broker);
  let kq = byTest(run.outcomes);
  let result = checkAgainstBaseline(kq, recorded);
  if (result.failed.length > 0) {
    // Upstream marks the tests that race the worker `flaky` (rerun by pytest-rerunfailures, not installed here): as the
    // full runs do, a failure is run once more alone, and that run's result counts. Python's test_retry races the same way.
    const failedFirst = result.failed;
    const again = await runSuite({ celery, broker, worker: 'kq', files, keyword: rerunKeyword(failedFirst, values.k), testTimeout: Number(values.timeout), log: (line) => console.log(line) });
    const rerun = byTest(again.outcomes);
    const first = kq;
    kq = { ...kq };
    for (const test of failedFirst) {
      const outcome = rerun[test];
      if (!outcome) continue;
      kq[test] = outcome;
      console.log(`  rerun alone          ${test}  ${outcome.outcome} (first: ${first[test]?.message ?? 'failed'})`);
    }
    result = checkAgainstBaseline(kq, recorded);
  }
  for (const test of result.notCounted) console.log(`  fails on Python too  ${test}  ${kq[test]?.message ?? ''}`);
  for (const test of result.failed) console.log(`  FAIL                 ${test}  ${kq[test]?.message ?? ''}`);
  console.log(`Celery ${celery.version} × ${broker} on kq (${Math.round(run.seconds)} s, logs in ${run.logDir}), against the Python run of ${recorded?.ranAt.slice(0, 10) ?? 'never'}:`);
  console.log(`${result.passed.length} passed, ${result.failed.length} failed, ${result.skipped.length + result.notCounted.length} skipped`);
  if (result.failed.length > 0 || result.passed.length === 0) process.exitCode = 1;
}

/** Runs `work` over `items`, at most `limit` at once; results in the items' order. */
async function runAll<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

function printVerdicts(pair: PairResults): void {
  const tests = Object.keys({ ...pair.kq, ...pair.celery }).sort();
  let counted = 0;
  let passing = 0;
  for (const test of tests) {
    const result = verdict(pair.kq[test], pair.celery[test]);
    if (result === 'pass' || result === 'fail') counted += 1;
    if (result === 'pass') passing += 1;
    if (result !== 'pass') console.log(`  ${result.padEnd(20)} ${test}  ${pair.kq[test]?.message ?? ''}`);
  }
  console.log(`Celery ${pair.version} × ${pair.broker}: kq passes ${passing} of ${counted} applicable tests (${tests.length} run)`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
