// The fleet: N worker processes (kq from the built packages, or Python Celery), each in a process group of its own so
// a stop takes every child with it; their log lines are watched for readiness and for peers reported lost.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { processTreesCpuUs, processTreesRssBytes } from '../process-tree';

export type FleetSystem = 'kq' | 'python';

const KQ_CLI = fileURLToPath(new URL('../../../packages/worker/dist/cli/kq.js', import.meta.url));
const FLEET_DIR = fileURLToPath(new URL('.', import.meta.url));

/** Lines that say a worker is consuming: kq's `<node> ready: queues …`, Celery's `<node> ready.` */
const READY = /\bready[.:]/;
/** A peer reported lost or gone by Gossip: Celery's and kq's `missed heartbeat from <node>`, kq's notice. */
const LOST = /(?:missed heartbeat from|reported lost by \S+:) (\S+)/;

export interface FleetWorker {
  readonly name: string;
  readonly child: ChildProcess;
  readonly spawnedAt: number;
  readyAt: number | undefined;
  mingleStartedAt: number | undefined;
  /** Peer node name → when this worker's log first said it was lost. */
  readonly lostSeen: Map<string, number>;
}

export interface FleetOptions {
  system: FleetSystem;
  brokerUrl: string;
  /** Extra worker arguments (e.g. `--without-gossip`). */
  extraArgs?: readonly string[];
}

const live = new Set<ChildProcess>();
const exitKills = new Set<() => void>();
let hooksInstalled = false;

/** Runs `kill` (synchronous, e.g. a SIGKILL) if the bench exits or is stopped first; returns the way to forget it. */
export function killOnExit(kill: () => void): () => void {
  exitKills.add(kill);
  return () => exitKills.delete(kill);
}

/** Kills every fleet process left on exit or on a signal (bounded: SIGKILL to each process group). */
export function installFleetExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', () => killAll());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\n${signal}: stopping ${live.size} fleet process(es)\n`);
      killAll();
      process.exit(130);
    });
  }
}

function killAll(): void {
  for (const child of live) killGroup(child);
  for (const kill of exitKills) {
    try {
      kill();
    } catch {
      // already gone
    }
  }
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export class Fleet {
  readonly workers: FleetWorker[] = [];
  readonly #options: FleetOptions;

  constructor(options: FleetOptions) {
    this.#options = options;
  }

  /** Starts workers `count` more, `batch` at a time, each batch once the previous one is ready (or `batchWaitMs` passed). */
  async start(count: number, batch: number, batchWaitMs = 15_000): Promise<void> {
    for (let started = 0; started < count; started += batch) {
      const wave = Array.from({ length: Math.min(batch, count - started) }, () => this.spawnWorker());
      const deadline = Date.now() + batchWaitMs;
      while (Date.now() < deadline && wave.some((worker) => worker.readyAt === undefined && worker.child.exitCode === null)) await sleep(50);
    }
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && this.workers.some((worker) => worker.readyAt === undefined && worker.child.exitCode === null)) await sleep(100);
  }

  spawnWorker(name = `w${String(this.workers.length + 1).padStart(3, '0')}@fleet`): FleetWorker {
    const { system, brokerUrl, extraArgs = [] } = this.#options;
    const [command, args] =
      system === 'kq'
        ? ['node', ['--max-old-space-size=64', KQ_CLI, '-A', `${FLEET_DIR}fleet-app.mjs`, '-b', brokerUrl, 'worker', '-c', '1', '-n', name, ...extraArgs]]
        : [process.env['KQ_PYTHON'] ?? '/usr/bin/python3', ['-m', 'celery', '-A', 'fleet_app', '-b', brokerUrl, 'worker', '-P', 'solo', '-c', '1', '-n', name, '-l', 'INFO', ...extraArgs]];
    const child = spawn(command, args as string[], {
      cwd: FLEET_DIR,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KQ_BROKER_URL: brokerUrl, PYTHONDONTWRITEBYTECODE: '1' },
    });
    live.add(child);
    child.once('exit', () => live.delete(child));
    const worker: FleetWorker = { name, child, spawnedAt: Date.now(), readyAt: undefined, mingleStartedAt: undefined, lostSeen: new Map() };
    // KQ_FLEET_LOG_DIR: every worker's output kept there, each line stamped with when the bench read it (ms).
    const logDir = process.env['KQ_FLEET_LOG_DIR'];
    if (logDir) mkdirSync(logDir, { recursive: true }); // a folder named that does not exist yet is made, not a crash
    const logFile = logDir ? createWriteStream(join(logDir, `${name}.log`)) : undefined;
    logFile?.write(`${worker.spawnedAt} (spawned)\n`);
    const onLine = (line: string): void => {
      const now = Date.now();
      logFile?.write(`${now} ${line}\n`);
      if (worker.readyAt === undefined && READY.test(line)) worker.readyAt = now;
      else if (worker.mingleStartedAt === undefined && line.includes('mingle: searching')) worker.mingleStartedAt = now;
      const lost = LOST.exec(line);
      if (lost?.[1] && !worker.lostSeen.has(lost[1])) worker.lostSeen.set(lost[1], now);
    };
    for (const stream of [child.stdout, child.stderr]) if (stream) createInterface({ input: stream }).on('line', onLine);
    child.once('exit', () => logFile?.end());
    this.workers.push(worker);
    return worker;
  }

  get ready(): FleetWorker[] {
    return this.workers.filter((worker) => worker.readyAt !== undefined && worker.child.exitCode === null);
  }

  /** User + system CPU of every worker process (and children), µs. */
  cpuUs(): number {
    return processTreesCpuUs(this.#pids());
  }

  rssBytes(): number {
    return processTreesRssBytes(this.#pids());
  }

  #pids(): number[] {
    return this.workers.flatMap((worker) => (worker.child.pid === undefined || worker.child.exitCode !== null ? [] : [worker.child.pid]));
  }

  kill(worker: FleetWorker): void {
    killGroup(worker.child);
  }

  /** SIGKILLs every process group and waits (bounded) for them to be gone. */
  async stop(): Promise<void> {
    for (const worker of this.workers) killGroup(worker.child);
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && this.workers.some((worker) => worker.child.exitCode === null && worker.child.signalCode === null)) await sleep(50);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
