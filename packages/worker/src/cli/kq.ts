#!/usr/bin/env node
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { KqError, sanitizeUrl } from '@kq/core';
import { parseLogLevel } from '../logger';
import type { AutoscaleOptions } from '../pool/autoscaler';
import type { PoolKind, SchedulingStrategy } from '../pool/pool';
import { WORKER_CLUSTER_FLAGS, clusterOptionsFromFlags } from '../cluster/cluster-options';
import { clusterSteps } from '../cluster/cluster-steps';
import { periodicStep } from '../periodic/periodic-step';
import { beatCommand, BEAT_USAGE } from './beat-command';
import { dlqCommand, DLQ_USAGE } from './dlq-command';
import { eventsCommand } from './events-command';
import { loadApp } from './load-app';
import { remoteCommand, statusCommand } from './remote-command';

const USAGE = `kq — Celery for Node

Usage:
  kq worker  -A <module> [-b url] [--result-backend url] [-Q q1,q2] [-c N] [-n name@host] [--prefetch-multiplier N] [--loglevel info]
             [-P async|threads|processes] [--autoscale max[,min]] [-O fair|fcfs] [--max-tasks-per-child N]
             [--max-memory-per-child KiB] [--http-port N [--http-host addr]]
             [-E] [--statedb file] [--without-mingle] [--without-gossip] [--without-heartbeat] [--heartbeat-interval s]
  kq call    <task> [-A module] [-b url] [--args '[...]'] [--kwargs '{...}'] [--countdown s] [--queue q] [--wait] [--timeout s]
  kq result  <task-id> [-A module] [--result-backend url] [--timeout s]
  kq purge   [-A module] [-b url] [-Q q1,q2] [-f]
  kq inspect <command> [args...] [-b url] [-d name@host,...] [--timeout s] [-j] [--args '{...}']
  kq control <command> [args...] [-b url] [-d name@host,...] [--timeout s] [-j] [--args '{...}']
  kq status  [-b url] [-d name@host,...] [--timeout s] [-j]
  kq events  [-A module] [-b url] [--dump] [-F seconds]
  ${DLQ_USAGE}
  ${BEAT_USAGE}

The broker comes from -b, KQ_BROKER_URL (or CELERY_BROKER_URL) or the app module (-A); with none it is an error,
as memory:// lives in one process (pass -b memory:// to use it anyway). Every command takes --help; kq --version.`;

const common = {
  app: { type: 'string', short: 'A' },
  broker: { type: 'string', short: 'b' },
  'result-backend': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const COMMANDS = ['worker', 'call', 'result', 'purge', 'inspect', 'control', 'status', 'events', 'beat', 'dlq'];

async function main(input: string[]): Promise<number> {
  const argv = commandFirst(input);
  const [command, ...rest] = argv;
  if (command === '--version' || command === '-V') {
    console.log(`kq ${await version()}`);
    return 0;
  }
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE);
    return command ? 0 : 64;
  }
  // `--help` anywhere prints the command's usage and runs nothing (a worker must not start, a purge must not purge).
  if (COMMANDS.includes(command) && (rest.includes('--help') || rest.includes('-h'))) {
    console.log(commandUsage(command));
    return 0;
  }
  switch (command) {
    case 'worker':
      return worker(rest);
    case 'call':
      return call(rest);
    case 'result':
      return result(rest);
    case 'purge':
      return purge(rest);
    case 'inspect':
    case 'control':
      return remoteCommand(command, rest);
    case 'status':
      return statusCommand(rest);
    case 'events':
      return eventsCommand(rest);
    case 'beat':
      return beatCommand(rest);
    case 'dlq':
      return dlqCommand(rest);
    default:
      console.error(`Unknown command ${JSON.stringify(command)}.\n\n${USAGE}`);
      return 64;
  }
}

async function worker(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...common,
      queues: { type: 'string', short: 'Q' },
      concurrency: { type: 'string', short: 'c' },
      hostname: { type: 'string', short: 'n' },
      loglevel: { type: 'string', short: 'l' },
      'prefetch-multiplier': { type: 'string' },
      pool: { type: 'string', short: 'P' },
      autoscale: { type: 'string' },
      optimization: { type: 'string', short: 'O' },
      'max-tasks-per-child': { type: 'string' },
      'max-memory-per-child': { type: 'string' },
      'http-port': { type: 'string' },
      'http-host': { type: 'string' },
      ...WORKER_CLUSTER_FLAGS,
    },
  });
  const app = await loadApp({ app: values.app, broker: values.broker, resultBackend: values['result-backend'] });
  const pool = poolKind(values.pool);
  if (pool !== 'async' && !values.app) throw new KqError(`--pool ${pool} needs -A <module>: every child imports the module that exports your App.`);
  const instance = app.worker({
    pool,
    ...(values.app ? { appModule: resolve(values.app) } : {}),
    ...(values.optimization ? { schedulingStrategy: schedulingStrategy(values.optimization) } : {}),
    ...(values.autoscale ? { autoscale: autoscale(values.autoscale) } : {}),
    ...(values['max-tasks-per-child'] ? { maxTasksPerChild: positiveInt(values['max-tasks-per-child'], '--max-tasks-per-child') } : {}),
    ...(values['max-memory-per-child'] ? { maxMemoryPerChild: positiveInt(values['max-memory-per-child'], '--max-memory-per-child') } : {}),
    ...(values.queues ? { queues: values.queues.split(',').map((q) => q.trim()).filter(Boolean) } : {}),
    ...(values.concurrency ? { concurrency: positiveInt(values.concurrency, '-c') } : {}),
    ...(values.hostname ? { hostname: values.hostname } : {}),
    ...(values['http-port'] !== undefined ? { httpPort: port(values['http-port'], '--http-port') } : {}),
    ...(values['http-host'] ? { httpHost: values['http-host'] } : {}),
    ...(values['prefetch-multiplier'] ? { prefetchMultiplier: Number(values['prefetch-multiplier']) } : {}),
    loglevel: parseLogLevel(values.loglevel),
    steps: [...clusterSteps(clusterOptionsFromFlags(values)), periodicStep()],
  });
  instance.installSignalHandlers(() => {
    void app.close().finally(() => process.exit(0));
  });
  // The remote `shutdown` command stops the worker without a signal: leave then too, as a Celery worker does.
  instance.once('shutdown', () => void app.close().finally(() => process.exit(0)));
  await instance.start();
  return -1; // keep running until a signal or a remote shutdown
}

async function call(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...common,
      args: { type: 'string', short: 'a' },
      kwargs: { type: 'string', short: 'k' },
      countdown: { type: 'string' },
      queue: { type: 'string', short: 'Q' },
      wait: { type: 'boolean', short: 'w' },
      timeout: { type: 'string' },
    },
  });
  const name = positionals[0];
  if (!name) throw new KqError('kq call needs a task name: kq call proj.add --args "[2, 2]"');
  const app = await loadApp({ app: values.app, broker: values.broker, resultBackend: values['result-backend'], oneShot: true });
  try {
    const args = parseJson(values.args ?? '[]', '--args');
    const kwargs = parseJson(values.kwargs ?? '{}', '--kwargs');
    if (!Array.isArray(args)) throw new KqError('--args must be a JSON array, e.g. --args "[2, 2]"');
    if (!kwargs || typeof kwargs !== 'object' || Array.isArray(kwargs)) throw new KqError('--kwargs must be a JSON object');
    const handle = await app.sendTask(name, args, kwargs as Record<string, unknown>, {
      ...(values.countdown ? { countdown: Number(values.countdown) } : {}),
      ...(values.queue ? { queue: values.queue } : {}),
    });
    console.log(handle.id);
    if (values.wait) console.log(JSON.stringify(await handle.get({ timeout: seconds(values.timeout, 30) })));
    return 0;
  } finally {
    await app.close();
  }
}

async function result(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { ...common, timeout: { type: 'string' } } });
  const id = positionals[0];
  if (!id) throw new KqError('kq result needs a task id.');
  const app = await loadApp({ app: values.app, broker: values.broker, resultBackend: values['result-backend'], oneShot: true });
  try {
    const handle = await app.asyncResult(id);
    const value = values.timeout ? await handle.get({ timeout: seconds(values.timeout, 30), propagate: false }) : await handle.meta();
    console.log(JSON.stringify(value ?? { status: 'PENDING', task_id: id }, null, 2));
    return 0;
  } finally {
    await app.close();
  }
}

async function purge(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { ...common, queues: { type: 'string', short: 'Q' }, force: { type: 'boolean', short: 'f' } } });
  const app = await loadApp({ app: values.app, broker: values.broker, resultBackend: values['result-backend'], oneShot: true });
  try {
    const queues = (values.queues ?? app.conf.taskDefaultQueue).split(',').map((q) => q.trim()).filter(Boolean);
    if (!values.force) {
      // As `celery purge`: deleting needs a yes; with no terminal to ask on, it needs -f.
      if (!process.stdin.isTTY) throw new KqError(`kq purge deletes every message in ${queues.join(', ')}: add -f to confirm.`);
      process.stdout.write(`Delete all messages in ${queues.join(', ')} on ${sanitizeUrl(app.conf.broker)}? [y/N] `);
      const answer = await new Promise<string>((resolve) => process.stdin.once('data', (data) => resolve(String(data).trim())));
      if (!/^y(es)?$/i.test(answer)) return 1;
    }
    let total = 0;
    for (const queue of queues) total += await app.connection.ensure((channel) => channel.purgeQueue(queue));
    console.log(`Purged ${total} message(s) from ${queues.length} queue(s).`);
    return 0;
  } finally {
    await app.close();
  }
}

/** Celery habit: options before the command (`kq -A proj worker -l info`) — the command is moved to the front. */
function commandFirst(argv: string[]): string[] {
  const at = argv.findIndex((arg) => COMMANDS.includes(arg));
  if (at <= 0) return argv;
  return [argv[at] as string, ...argv.slice(0, at), ...argv.slice(at + 1)];
}

/** The usage lines of one command (its line of USAGE and the lines continuing it). */
function commandUsage(command: string): string {
  const lines = USAGE.split('\n');
  const start = lines.findIndex((line) => line.trimStart().startsWith(`kq ${command} `) || line.trim() === `kq ${command}`);
  if (start < 0) return USAGE;
  const usage = [lines[start] as string];
  for (const line of lines.slice(start + 1)) {
    if (!/^\s{6,}\S/.test(line)) break;
    usage.push(line);
  }
  return `Usage:\n${usage.join('\n')}`;
}

async function version(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  for (const candidate of ['../../package.json', '../package.json']) {
    try {
      return (JSON.parse(await readFile(new URL(candidate, import.meta.url), 'utf8')) as { version: string }).version;
    } catch {
      // built (dist/cli) or source (src/cli) layout: try the other
    }
  }
  return 'unknown';
}

function parseJson(text: string, flag: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new KqError(`${flag} is not valid JSON: ${text}`);
  }
}

function seconds(value: string | undefined, fallback: number): number {
  return (value === undefined ? fallback : Number(value)) * 1000;
}

function poolKind(value: string | undefined): PoolKind {
  const kind = value ?? 'async';
  if (kind === 'async' || kind === 'threads' || kind === 'processes') return kind;
  throw new KqError(`Unknown pool ${JSON.stringify(value)}: use -P async, threads or processes.`);
}

/** Celery's `-O`: `fair` (and `default`) or `fcfs` (and `fast`). */
function schedulingStrategy(value: string): SchedulingStrategy {
  if (value === 'fair' || value === 'default') return 'fair';
  if (value === 'fcfs' || value === 'fast') return 'fcfs';
  throw new KqError(`Unknown -O ${JSON.stringify(value)}: use -O fair (the default) or -O fcfs.`);
}

/** `--autoscale max[,min]`, as Celery. */
function autoscale(value: string): AutoscaleOptions {
  const [max, min] = value.split(',').map((part) => part.trim());
  if (!max || (min !== undefined && !/^\d+$/.test(min))) throw new KqError(`--autoscale takes max[,min], e.g. --autoscale 10,2; got ${JSON.stringify(value)}.`);
  return { max: positiveInt(max, '--autoscale max'), min: min === undefined ? 0 : Number(min) };
}

function port(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new KqError(`${flag} must be a port number (0 to 65535), got ${JSON.stringify(value)}.`);
  return n;
}

function positiveInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new KqError(`${flag} must be a positive whole number, got ${JSON.stringify(value)}.`);
  return n;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`kq: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
