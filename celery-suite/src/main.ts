/**
 * Celery's own integration suite against a kq worker, with a Python worker of the same version as the baseline.
 *
 *   pnpm test:celery-suite                                   # every version × broker, then docs/celery-suite.md
 *   pnpm test:celery-suite --versions 5.2.6 --brokers redis  # one pair (what CI runs)
 *   pnpm test:celery-suite --versions 5.2.6 --files test_tasks.py -k retry --worker kq --no-write
 *
 * Upstream's files are read from ../shared/python/celery-integration, never copied into the repository.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { APPLICABLE_FILES, CELERY_VERSIONS, REPO_ROOT, celeryVersion, type BrokerKind } from './celery-versions';
import { byTest, loadResults, mergeResults, renderReport, verdict, type PairResults } from './suite-report';
import { runSuite, type WorkerKind } from './suite-run';

const RESULTS_PATH = join(REPO_ROOT, 'celery-suite', 'results.json');
const REPORT_PATH = join(REPO_ROOT, 'docs', 'celery-suite.md');

const NOTES = [
  'Both workers run at concurrency 1, as Celery\'s pytest worker does: `test_expired` and `test_revoked` assume few',
  'worker slots. kq stores REVOKED for a queued task as soon as the revoke arrives, where Python stores it when the task',
  'reaches the front of the queue; `test_wrong_arguments` can therefore find the slot still busy with the revoked',
  'task\'s successor on either worker. pytest-rerunfailures is not installed, so upstream\'s `flaky` marks rerun nothing.',
].join('\n');

const argv = process.argv.slice(2).filter((arg, index) => !(index === 0 && arg === '--'));
const { values } = parseArgs({
  args: argv,
  options: {
    versions: { type: 'string', default: CELERY_VERSIONS.map((v) => v.version).join(',') },
    brokers: { type: 'string', default: 'redis,amqp' },
    files: { type: 'string', default: APPLICABLE_FILES.join(',') },
    worker: { type: 'string', default: 'kq,celery' },
    k: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});

async function main(): Promise<void> {
  const versions = values.versions.split(',').map(celeryVersion);
  console.log(`Files: ${values.files}`);
  const brokers = values.brokers.split(',') as BrokerKind[];
  const workers = values.worker.split(',') as WorkerKind[];
  const fresh: PairResults[] = [];
  for (const celery of versions) {
    for (const broker of brokers) {
      const files = values.files.split(',');
      const seconds: Record<string, number> = {};
      const results: Record<WorkerKind, PairResults['kq']> = { kq: {}, celery: {} };
      // One after the other: upstream's tests share keys in Redis database 0 (redis-echo, redis-count) and check
      // the server's pub/sub channels, which a second run at the same time would disturb.
      for (const worker of workers) {
        const run = await runSuite({ celery, broker, worker, files, keyword: values.k, log: (line) => console.log(line) });
        results[worker] = byTest(run.outcomes);
        seconds[worker] = run.seconds;
        const passed = Object.values(results[worker]).filter((result) => result.outcome === 'passed').length;
        console.log(`Celery ${celery.version} × ${broker}, ${worker} worker: ${passed} of ${Object.keys(results[worker]).length} passed in ${Math.round(run.seconds)} s`);
      }
      // A worker not run this time (--worker kq) keeps its last results for the pair, if they cover the same files.
      const previous = loadResults(RESULTS_PATH).find((pair) => pair.version === celery.version && pair.broker === broker && pair.files.join() === files.join());
      for (const worker of ['kq', 'celery'] as const) {
        if (!workers.includes(worker) && previous) {
          results[worker] = previous[worker];
          seconds[worker] = previous.seconds[worker] ?? 0;
        }
      }
      const pair: PairResults = { version: celery.version, broker, files, ranAt: new Date().toISOString(), seconds, kq: results.kq, celery: results.celery };
      printVerdicts(pair);
      fresh.push(pair);
    }
  }
  if (values['no-write'] || values.k !== undefined) return;
  const merged = mergeResults(loadResults(RESULTS_PATH), fresh);
  writeFileSync(RESULTS_PATH, `${JSON.stringify(merged, null, 1)}\n`);
  writeFileSync(REPORT_PATH, renderReport(merged, NOTES));
  console.log(`Wrote ${REPORT_PATH}`);
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
