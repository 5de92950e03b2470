import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { HARNESS_PYTHON, REPO_ROOT, type BrokerKind, type CeleryVersion } from './celery-versions';
import { isolateRun, type RunIsolation } from './run-isolation';
import { makeWorkerCertificate } from './suite-signing';
import type { WorkerKind } from './worker-kind';

export type { WorkerKind } from './worker-kind';

export interface TestOutcome {
  readonly nodeid: string;
  readonly when: string;
  readonly outcome: 'passed' | 'failed' | 'skipped';
  readonly message: string;
}

export interface SuiteRunOptions {
  readonly celery: CeleryVersion;
  readonly broker: BrokerKind;
  readonly worker: WorkerKind;
  readonly files: readonly string[];
  /** pytest's `-k`, to run a few tests while working on one. */
  readonly keyword?: string | undefined;
  /** pytest-timeout's limit for one test, in seconds: a hung test fails alone instead of holding the run. */
  readonly testTimeout: number;
  readonly log: (line: string) => void;
}

export interface SuiteRunResult {
  readonly outcomes: readonly TestOutcome[];
  readonly seconds: number;
  /** Where the worker's and pytest's output went. */
  readonly logDir: string;
}

const PYTHON = '/usr/bin/python3';

/** Every child of every run under way, killed if the runner itself is stopped (else a stray worker answers pings). */
const liveChildren = new Set<ChildProcess>();
let signalsHandled = false;

function killChildrenOnSignal(): void {
  if (signalsHandled) return;
  signalsHandled = true;
  const onSignal = (signal: NodeJS.Signals): void => {
    for (const child of liveChildren) child.kill('SIGKILL');
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
}

/**
 * Runs the selected upstream test files once: pytest first (our plugin replaces celery_session_worker), then the
 * worker named as upstream's in-process worker would be (`gen<pytest pid>@<host>`, which test_inspect.py expects),
 * at concurrency 1 like Celery's pytest worker. The run has its own Redis server and vhost (run-isolation.ts), so
 * other runs may go at the same time. Returns each test's outcome.
 */
export async function runSuite(options: SuiteRunOptions): Promise<SuiteRunResult> {
  const { celery, broker, worker } = options;
  killChildrenOnSignal();
  const logDir = mkdtempSync(join(tmpdir(), `celery-suite-${celery.version}-${broker}-${worker}-`));
  const isolation = await isolateRun(celery, broker, worker);
  try {
    return await runIsolated(options, isolation, logDir);
  } finally {
    await isolation.close();
  }
}

async function runIsolated(options: SuiteRunOptions, isolation: RunIsolation, logDir: string): Promise<SuiteRunResult> {
  const { celery, broker, worker, files } = options;
  const reportPath = join(logDir, 'outcomes.jsonl');
  // tempfile's folder: what a test writes there (test_security's certificates) stays in the run's own folder.
  const testTmp = join(logDir, 'tmp');
  mkdirSync(testTmp);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PYTHONPATH: [...celery.pythonPath, HARNESS_PYTHON, celery.integrationRoot].join(':'),
    PYTHONDONTWRITEBYTECODE: '1',
    TMPDIR: testTmp,
    TEST_BROKER: isolation.pythonBrokerUrl,
    TEST_BACKEND: isolation.backendUrl,
    REDIS_HOST: '127.0.0.1',
    REDIS_PORT: String(isolation.redisPort),
    KQ_SUITE_WORKER: worker,
    KQ_SUITE_REPORT: reportPath,
    KQ_SUITE_RESULT_EXTENDED: celery.resultExtended ? '1' : '0',
    KQ_SUITE_CELERY_CONFIG: JSON.stringify(isolation.celeryConfig),
  };
  const started = Date.now();
  const pytestArgs = [
    '-m', 'pytest', '-p', 'kq_suite_plugin', '-p', 'no:cacheprovider',
    // Celery's setup.cfg: its test classes are named test_*.
    '-o', 'python_classes=test_*',
    '--rootdir', celery.integrationRoot,
    '--timeout', String(options.testTimeout),
    // Where the time goes, in pytest.log.
    '--durations', '25',
    '-q', '-rN',
    ...(options.keyword ? ['-k', options.keyword] : []),
    ...files.map((file) => join(celery.integrationRoot, 't', 'integration', file)),
  ];
  if (worker === 'kq' && files.includes('test_security.py')) {
    // test_security.py sends signed tasks: the kq worker accepts them, trusting the certificate the test makes.
    env['KQ_SUITE_SIGNING_DIR'] = logDir;
    await makeWorkerCertificate(logDir);
  }
  const pytest = track(spawn(PYTHON, pytestArgs, { cwd: logDir, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  pipeTo(pytest, join(logDir, 'pytest.log'));
  const nodeName = `gen${pytest.pid ?? 0}@${hostname()}`;
  options.log(`  ${celery.version} × ${broker}: ${worker} worker ${nodeName}, logs in ${logDir}`);
  const workerProcess = track(worker === 'kq' ? startKqWorker(nodeName, isolation, env) : startPythonWorker(nodeName, env, testTmp));
  pipeTo(workerProcess, join(logDir, 'worker.log'));
  let exitCode: number | null;
  try {
    exitCode = await exited(pytest);
  } finally {
    await stop(workerProcess);
  }
  // 3: our plugin found the wrong worker (or none) answering; 4: pytest's usage error. Either way no outcome counts.
  if (exitCode === 3 || exitCode === 4) {
    const log = readFileSync(join(logDir, 'pytest.log'), 'utf8').trim().split('\n').slice(-3).join('\n');
    throw new Error(`The ${worker} run of Celery ${celery.version} × ${broker} is void (pytest exit ${exitCode}):\n${log}`);
  }
  return { outcomes: readOutcomes(reportPath), seconds: (Date.now() - started) / 1000, logDir };
}

function startKqWorker(nodeName: string, isolation: RunIsolation, env: NodeJS.ProcessEnv): ChildProcess {
  const args = [
    join(REPO_ROOT, 'packages', 'worker', 'bin', 'kq.js'), 'worker',
    '-A', join(REPO_ROOT, 'celery-suite', 'src', 'integration-app.ts'),
    '-b', isolation.brokerUrl, '--result-backend', isolation.backendUrl,
    '-c', '1', '-n', nodeName, '-l', 'info',
  ];
  return spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...env, TEST_BROKER: isolation.brokerUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
}

function startPythonWorker(nodeName: string, env: NodeJS.ProcessEnv, cwd: string): ChildProcess {
  // Upstream's pytest worker: the prefork pool (its conftest's celery_worker_pool) with one process. (A solo pool
  // cannot enforce soft time limits, which test_chord_soft_timeout_recuperation needs.)
  const args = ['-m', 'celery', '-A', 'python_worker_app', 'worker', '-P', 'prefork', '-c', '1', '-n', nodeName, '-l', 'info', '--without-mingle', '--without-gossip'];
  return spawn(PYTHON, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
}

function track(child: ChildProcess): ChildProcess {
  liveChildren.add(child);
  child.once('exit', () => liveChildren.delete(child));
  return child;
}

function pipeTo(child: ChildProcess, path: string): void {
  const sink = createWriteStream(path);
  child.stdout?.pipe(sink, { end: false });
  child.stderr?.pipe(sink, { end: false });
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolveExit) => child.once('exit', (code) => resolveExit(code)));
}

/** SIGTERM (a warm shutdown), then SIGKILL if it has not exited within 15 s. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited(child);
  clearTimeout(timer);
}

function readOutcomes(path: string): TestOutcome[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as TestOutcome);
}
