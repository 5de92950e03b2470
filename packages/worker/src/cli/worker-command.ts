import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { KqError } from '@kq/core';
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { App } from '../app/app';
import { clusterOptionsFromFlags, type WorkerClusterFlagValues } from '../cluster/cluster-options';
import { clusterSteps } from '../cluster/cluster-steps';
import { fileLogSink } from '../log/log-file-sink';
import { jsonLogSink } from '../log/log-json-sink';
import { Logger, type LogFormat, type LogLevel } from '../log/logger';
import { periodicStep } from '../beat/periodic/periodic-step';
import type { AutoscaleOptions } from '../pool/autoscaler';
import type { PoolKind, SchedulingStrategy } from '../pool/pool';
import type { WorkerOptions } from '../runtime/worker';
import { createBeat } from './beat-command';
import { globalOptions } from './global-options';
import { loadApp } from './load-app';
import { parseLogLevelOption } from './log-options';
import { PidFile } from './pid-file';
import { commaList, nonNegativeNumber, port, positiveInt, positiveSeconds } from './option-parsers';

interface WorkerFlags extends WorkerClusterFlagValues {
  queues?: string[];
  excludeQueues?: string[];
  include?: string[];
  concurrency?: number;
  hostname?: string;
  loglevel: LogLevel;
  logfile?: string;
  logFormat?: LogFormat;
  pidfile?: string;
  detach?: boolean;
  prefetchMultiplier?: number;
  /** As typed: a kq pool kind or one of Celery's names (see POOL_ALIASES). */
  pool?: string;
  autoscale?: AutoscaleOptions;
  optimization?: SchedulingStrategy;
  maxTasksPerChild?: number;
  maxMemoryPerChild?: number;
  timeLimit?: number;
  softTimeLimit?: number;
  purge?: boolean;
  discard?: boolean;
  beat?: boolean;
  schedule?: string;
  httpPort?: number;
  httpHost?: string;
}

/** Celery's `-P` names: its own kinds map to the kq pool that behaves alike. */
/** How long `kq worker` waits, once the worker stopped, for its connections to close before it exits anyway. */
const APP_CLOSE_BOUND_MS = 5000;

const POOL_ALIASES: Readonly<Record<string, PoolKind>> = {
  async: 'async',
  solo: 'async', // one task at a time in the main process: async with -c 1 (set below)
  eventlet: 'async',
  gevent: 'async',
  threads: 'threads',
  processes: 'processes',
  prefork: 'processes',
};

export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('Start a worker (celery worker).')
    .option('-Q, --queues <names>', "comma-separated queues to consume (default: the app's default queue)", commaList)
    .option('-X, --exclude-queues <names>', 'queues not to consume', commaList)
    .option('-I, --include <modules>', 'comma-separated modules to import first (more task definitions)', commaList)
    .option('-c, --concurrency <n>', 'tasks run at once (default: the pool\'s)', positiveInt)
    .option('-n, --hostname <name>', 'the node name, e.g. w1@%h')
    .option('-l, --loglevel <level>', 'debug, info, warning, error or critical', parseLogLevelOption, 'info')
    .option('-f, --logfile <path>', 'append the log to this file instead of stderr')
    .addOption(new Option('--log-format <format>', "text (Celery's lines) or json (one object per line, with task and trace ids)").choices(['text', 'json']))
    .option('--pidfile <path>', 'write the pid here; refuse to start while it names a running process')
    .option('-D, --detach', 'run in the background (logs to --logfile, default ./kq-worker.log; pid to --pidfile, default ./kq-worker.pid)')
    .addOption(new Option('-P, --pool <kind>', 'async, threads or processes (Celery\'s solo, prefork, eventlet, gevent accepted)').argParser(pool))
    .option('--autoscale <max,min>', 'grow and shrink the pool between min and max', autoscale)
    .addOption(new Option('-O, --optimization <strategy>', 'fair (default) or fcfs').argParser(schedulingStrategy))
    .option('--prefetch-multiplier <n>', 'messages reserved per pool slot', positiveInt)
    .option('--max-tasks-per-child <n>', 'replace a pool child after this many tasks', positiveInt)
    .option('--max-memory-per-child <KiB>', 'replace a pool child above this resident memory', positiveInt)
    .option('--time-limit <seconds>', 'hard time limit for every task (a task\'s own limit wins)', positiveSeconds)
    .option('--soft-time-limit <seconds>', 'soft time limit for every task', positiveSeconds)
    .option('--purge', 'delete the waiting messages of the queues consumed before starting')
    .addOption(new Option('--discard', "Celery's other name for --purge").hideHelp())
    .option('-B, --beat', 'also run beat in this process (safe on every worker: one beat leads at a time)')
    .option('-s, --schedule <file>', 'with -B: a schedule file (JSON or YAML)')
    .option('-E, --task-events', 'send task events (for kq events, Flower, the dashboard)')
    .option('-S, --statedb <file>', 'keep revoked tasks and the clock across restarts in this file')
    .option('--without-mingle', 'do not sync with the other workers at start')
    .option('--without-gossip', 'do not follow the other workers\' events')
    .option('--without-heartbeat', 'send no worker heartbeats')
    .option('--heartbeat-interval <seconds>', 'seconds between heartbeats', positiveSeconds)
    .option('--http-port <port>', 'serve /healthz, /readyz and /metrics on this port', port)
    .option('--http-host <address>', 'with --http-port: the address to listen on (default 127.0.0.1)')
    .action(async (flags: WorkerFlags, command: Command) => {
      if (flags.detach) return detach(flags);
      await runWorker(flags, command);
    });
}

async function runWorker(flags: WorkerFlags, command: Command): Promise<void> {
  const global = globalOptions(command);
  const pidfile = flags.pidfile ? new PidFile(resolve(flags.pidfile)) : undefined;
  pidfile?.acquire();
  // One sink for the worker and an embedded beat: JSON (to the log file or stderr) or Celery's lines to the log file.
  const logSink =
    flags.logFormat === 'json'
      ? jsonLogSink(flags.logfile ? { destination: resolve(flags.logfile) } : {})
      : flags.logfile
        ? fileLogSink(resolve(flags.logfile))
        : undefined;
  let app: App | undefined;
  const exit = (code: number): void => {
    pidfile?.release();
    // Closing the connections waits for a broker that may be down: the worker has stopped, so not for long.
    const closed = Promise.resolve(app?.close()).catch(() => undefined);
    void Promise.race([closed, new Promise((resolve) => setTimeout(resolve, APP_CLOSE_BOUND_MS).unref())])
      .then(() => logSink?.close())
      .finally(() => process.exit(code));
  };
  try {
    app = await loadApp(global);
    if (flags.logFormat) app.conf.workerLogFormat = flags.logFormat;
    const kind: PoolKind = POOL_ALIASES[flags.pool ?? 'async'] ?? 'async';
    if (kind !== 'async' && !global.app) throw new KqError(`--pool ${kind} needs -A <module>: every child imports the module that exports your App.`);
    if (flags.include?.length) {
      if (kind !== 'async') throw new KqError(`-I imports into the worker process only, and -P ${kind} runs tasks in children that load -A alone: import those modules from your app module instead.`);
      for (const module of flags.include) await import(pathToFileURL(resolve(module)).href);
    }
    if (flags.timeLimit !== undefined) app.conf.taskTimeLimit = flags.timeLimit;
    if (flags.softTimeLimit !== undefined) app.conf.taskSoftTimeLimit = flags.softTimeLimit;
    const queues = workerQueues(app, flags);
    const options: WorkerOptions = {
      pool: kind,
      ...(global.app ? { appModule: resolve(global.app) } : {}),
      ...(flags.optimization ? { schedulingStrategy: flags.optimization } : {}),
      ...(flags.autoscale ? { autoscale: flags.autoscale } : {}),
      ...(flags.maxTasksPerChild ? { maxTasksPerChild: flags.maxTasksPerChild } : {}),
      ...(flags.maxMemoryPerChild ? { maxMemoryPerChild: flags.maxMemoryPerChild } : {}),
      ...(queues ? { queues } : {}),
      ...(flags.concurrency ? { concurrency: flags.concurrency } : flags.pool === 'solo' ? { concurrency: 1 } : {}),
      ...(flags.hostname ? { hostname: flags.hostname } : {}),
      ...(flags.httpPort !== undefined ? { httpPort: flags.httpPort } : {}),
      ...(flags.httpHost ? { httpHost: flags.httpHost } : {}),
      ...(flags.prefetchMultiplier ? { prefetchMultiplier: flags.prefetchMultiplier } : {}),
      loglevel: flags.loglevel,
      steps: [...clusterSteps(clusterOptionsFromFlags(flags)), periodicStep()],
    };
    const logger = logSink ? new Logger(flags.hostname ?? 'worker', { level: flags.loglevel, sink: logSink }) : undefined;
    const instance = app.worker({ ...options, ...(logger ? { logger } : {}) });
    if (flags.purge || flags.discard) {
      let purged = 0;
      for (const queue of queues ?? [app.conf.taskDefaultQueue]) purged += await app.connection.ensure((channel) => channel.purgeQueue(queue));
      instance.log.warning(`purge: erased ${purged} message(s) from the queue(s).`);
    }
    const beat = flags.beat
      ? await createBeat(app, {
          ...(global.app ? { appModule: global.app } : {}),
          ...(flags.schedule ? { schedule: flags.schedule } : {}),
          loglevel: flags.loglevel,
          ...(logger ? { logger: logger.child('beat') } : {}),
        })
      : undefined;
    instance.installSignalHandlers(() => {
      void Promise.resolve(beat?.stop()).finally(() => exit(0));
    });
    // A worker that cannot go on (the broker refuses what consuming needs) stops itself: leave with 1.
    let exitCode = 0;
    instance.once('fatal', () => (exitCode = 1));
    // The remote `shutdown` command stops the worker without a signal: leave then too, as a Celery worker does.
    instance.once('shutdown', () => void Promise.resolve(beat?.stop()).finally(() => exit(exitCode)));
    await instance.start();
    await beat?.start();
  } catch (error) {
    pidfile?.release();
    await logSink?.close();
    throw error;
  }
}

/** `-Q` (or the app's default queue) without `-X`; undefined when neither flag changes the worker's default. */
function workerQueues(app: App, flags: WorkerFlags): string[] | undefined {
  if (!flags.queues && !flags.excludeQueues) return undefined;
  const excluded = new Set(flags.excludeQueues ?? []);
  const queues = (flags.queues ?? [app.conf.taskDefaultQueue]).filter((queue) => !excluded.has(queue));
  if (queues.length === 0) throw new KqError('-X excludes every queue this worker would consume: name the ones to consume with -Q.');
  return queues;
}

/**
 * `--detach`: starts this same command again as a background process whose output goes to the log file, waits until
 * it has written its pidfile (or died, showing why), then returns. A process manager (systemd, pm2) is the better
 * home for a long-lived worker; docs/deployment.md has the units.
 */
async function detach(flags: WorkerFlags): Promise<void> {
  const logfile = resolve(flags.logfile ?? 'kq-worker.log');
  const pidfile = new PidFile(resolve(flags.pidfile ?? 'kq-worker.pid'));
  const running = pidfile.livePid();
  if (running !== undefined) throw new KqError(`A worker is already running with pidfile ${pidfile.path} (pid ${running}): stop it first.`);
  const args = process.argv.slice(1).filter((arg) => arg !== '--detach' && arg !== '-D');
  const out = openSync(logfile, 'a');
  const child = spawn(process.execPath, [...process.execArgv, ...args, '--logfile', logfile, '--pidfile', pidfile.path], {
    detached: true,
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const state = await Promise.race([exited.then((code) => ({ code })), new Promise<undefined>((r) => setTimeout(() => r(undefined), 100))]);
    if (state) {
      const tail = readTail(logfile, 5);
      throw new KqError(`The detached worker exited at start (code ${state.code}); the end of ${logfile}:\n${tail}`);
    }
    if (pidfile.livePid() === child.pid) {
      child.unref();
      console.log(`kq worker detached: pid ${child.pid}, log ${logfile}, pidfile ${pidfile.path}`);
      return;
    }
  }
  child.unref();
  throw new KqError(`The detached worker (pid ${child.pid}) did not write ${pidfile.path} within 30 s; see ${logfile}.`);
}

function readTail(path: string, lines: number): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function pool(value: string): string {
  if (!POOL_ALIASES[value]) throw new InvalidArgumentError("use async, threads or processes (or Celery's solo, prefork, eventlet, gevent).");
  return value;
}

/** Celery's `-O`: `fair` (and `default`) or `fcfs` (and `fast`). */
function schedulingStrategy(value: string): SchedulingStrategy {
  if (value === 'fair' || value === 'default') return 'fair';
  if (value === 'fcfs' || value === 'fast') return 'fcfs';
  throw new InvalidArgumentError('use fair (the default) or fcfs.');
}

/** `--autoscale max[,min]`, as Celery. */
function autoscale(value: string): AutoscaleOptions {
  const [max, min] = value.split(',').map((part) => part.trim());
  if (!max || (min !== undefined && !/^\d+$/.test(min))) throw new InvalidArgumentError('expected max[,min], e.g. --autoscale 10,2.');
  return { max: positiveInt(max), min: min === undefined ? 0 : nonNegativeNumber(min) };
}
