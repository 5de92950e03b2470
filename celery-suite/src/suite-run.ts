import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { HARNESS_PYTHON, REPO_ROOT, type BrokerKind, type CeleryVersion } from './celery-versions';

/** Which worker runs the tasks: kq (under test) or Python Celery of the same version (the baseline). */
export type WorkerKind = 'kq' | 'celery';

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
  readonly log: (line: string) => void;
}

export interface SuiteRunResult {
  readonly outcomes: readonly TestOutcome[];
  readonly seconds: number;
  /** Where the worker's and pytest's output went. */
  readonly logDir: string;
}

/** Private Redis databases for the broker (inspect ping must reach the run's own worker only). */
const REDIS_DB: Record<WorkerKind, number> = { kq: 1, celery: 4 };
const PYTHON = '/usr/bin/python3';

export function brokerUrls(broker: BrokerKind, worker: WorkerKind): { broker: string; backend: string } {
  // Results in database 0, where upstream's tests read the backend's keys with their own connection
  // (test_chord_on_error reads a chord's <gid>.j); result keys are unique ids, and inspect goes through the broker.
  const backend = 'redis://127.0.0.1:6379/0';
  if (broker === 'redis') return { broker: `redis://127.0.0.1:6379/${REDIS_DB[worker]}`, backend };
  return { broker: 'amqp://guest:guest@127.0.0.1:5672//', backend };
}

/**
 * Runs the selected upstream test files once: pytest first (our plugin replaces celery_session_worker), then the
 * worker named as upstream's in-process worker would be (`gen<pytest pid>@<host>`, which test_inspect.py expects),
 * at concurrency 1 like Celery's pytest worker. Returns each test's outcome.
 */
export async function runSuite(options: SuiteRunOptions): Promise<SuiteRunResult> {
  const { celery, broker, worker, files } = options;
  const logDir = mkdtempSync(join(tmpdir(), `celery-suite-${celery.version}-${broker}-${worker}-`));
  const reportPath = join(logDir, 'outcomes.jsonl');
  const urls = brokerUrls(broker, worker);
  await flushRedisDb(REDIS_DB[worker]);
  const pythonPath = [...celery.pythonPath, HARNESS_PYTHON, celery.integrationRoot].join(':');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PYTHONPATH: pythonPath,
    PYTHONDONTWRITEBYTECODE: '1',
    TEST_BROKER: pythonBrokerUrl(urls.broker),
    TEST_BACKEND: urls.backend,
    REDIS_HOST: '127.0.0.1',
    KQ_SUITE_WORKER: worker,
    KQ_SUITE_REPORT: reportPath,
    KQ_SUITE_RESULT_EXTENDED: celery.resultExtended ? '1' : '0',
  };
  const started = Date.now();
  const pytestArgs = [
    '-m', 'pytest', '-p', 'kq_suite_plugin', '-p', 'no:cacheprovider',
    // Celery's setup.cfg: its test classes are named test_*.
    '-o', 'python_classes=test_*',
    '--rootdir', celery.integrationRoot,
    '--timeout', '300',
    '-q', '-rN',
    ...(options.keyword ? ['-k', options.keyword] : []),
    ...files.map((file) => join(celery.integrationRoot, 't', 'integration', file)),
  ];
  const pytest = spawn(PYTHON, pytestArgs, { cwd: logDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  pipeTo(pytest, join(logDir, 'pytest.log'));
  const nodeName = `gen${pytest.pid ?? 0}@${hostname()}`;
  options.log(`  ${worker} worker ${nodeName}, logs in ${logDir}`);
  const workerProcess = worker === 'kq' ? startKqWorker(nodeName, urls, env) : startPythonWorker(nodeName, env);
  pipeTo(workerProcess, join(logDir, 'worker.log'));
  // Stopped itself (Ctrl+C, SIGTERM): take the worker and pytest along, or a stray worker answers the next run's ping.
  const onSignal = (signal: NodeJS.Signals): void => {
    pytest.kill('SIGKILL');
    workerProcess.kill('SIGKILL');
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let exitCode: number | null;
  try {
    exitCode = await exited(pytest);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await stop(workerProcess);
  }
  // 3: our plugin found the wrong worker (or none) answering; 4: pytest's usage error. Either way no outcome counts.
  if (exitCode === 3 || exitCode === 4) {
    const log = readFileSync(join(logDir, 'pytest.log'), 'utf8').trim().split('\n').slice(-3).join('\n');
    throw new Error(`The ${worker} run of Celery ${celery.version} × ${broker} is void (pytest exit ${exitCode}):\n${log}`);
  }
  return { outcomes: readOutcomes(reportPath), seconds: (Date.now() - started) / 1000, logDir };
}

function startKqWorker(nodeName: string, urls: { broker: string; backend: string }, env: NodeJS.ProcessEnv): ChildProcess {
  const args = [
    join(REPO_ROOT, 'packages', 'worker', 'bin', 'kq.js'), 'worker',
    '-A', join(REPO_ROOT, 'celery-suite', 'src', 'integration-app.ts'),
    '-b', urls.broker, '--result-backend', urls.backend,
    '-c', '1', '-n', nodeName, '-l', 'info',
  ];
  return spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...env, TEST_BROKER: urls.broker }, stdio: ['ignore', 'pipe', 'pipe'] });
}

function startPythonWorker(nodeName: string, env: NodeJS.ProcessEnv): ChildProcess {
  // Upstream's pytest worker: the prefork pool (its conftest's celery_worker_pool) with one process. (A solo pool
  // cannot enforce soft time limits, which test_chord_soft_timeout_recuperation needs.)
  const args = ['-m', 'celery', '-A', 'python_worker_app', 'worker', '-P', 'prefork', '-c', '1', '-n', nodeName, '-l', 'info', '--without-mingle', '--without-gossip'];
  return spawn(PYTHON, args, { cwd: tmpdir(), env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Kombu spells RabbitMQ's URL with pyamqp://. */
function pythonBrokerUrl(url: string): string {
  return url.startsWith('amqp://') ? `py${url}` : url;
}

async function flushRedisDb(db: number): Promise<void> {
  const redis = new Redis({ host: '127.0.0.1', port: 6379, db, lazyConnect: true });
  try {
    await redis.connect();
    await redis.flushdb();
  } finally {
    redis.disconnect();
  }
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
