// The systems measured, and how each one's runner process is started.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SPEC_ENV, type RunnerSpec } from './protocol';
import type { RunnerCommand } from './runner-process';

export const SYSTEM_IDS = ['kq', 'bullmq', 'bee-queue', 'celery-node', 'python-celery', 'raw-ioredis', 'raw-amqplib', 'pg-boss', 'graphile-worker'] as const;
export type SystemId = (typeof SYSTEM_IDS)[number];

export const SYSTEM_NAMES: Record<SystemId, string> = {
  kq: 'kq',
  bullmq: 'BullMQ',
  'bee-queue': 'bee-queue',
  'celery-node': 'celery.node',
  'python-celery': 'Python Celery',
  'raw-ioredis': 'raw ioredis',
  'raw-amqplib': 'raw amqplib',
  'pg-boss': 'pg-boss',
  'graphile-worker': 'graphile-worker',
};

/** Names `--systems` accepts besides the ids. */
const ALIASES: Record<string, readonly SystemId[]> = {
  celery: ['python-celery'],
  python: ['python-celery'],
  'celery.node': ['celery-node'],
  bee: ['bee-queue'],
  raw: ['raw-ioredis', 'raw-amqplib'],
  ioredis: ['raw-ioredis'],
  amqplib: ['raw-amqplib'],
  pgboss: ['pg-boss'],
  graphile: ['graphile-worker'],
};

/**
 * Each system's PostgreSQL database on the benchmark's server: kq's is the one `--postgres-url` names, each peer's
 * is that name with a suffix (created if missing), so no system reads another's tables or counts its commits.
 */
const POSTGRES_DATABASE_SUFFIX: Partial<Record<SystemId, string>> = { 'pg-boss': '_pgboss', 'graphile-worker': '_graphile' };

export function postgresUrlFor(base: string, system: SystemId): string {
  const suffix = POSTGRES_DATABASE_SUFFIX[system];
  if (!suffix) return base;
  const url = new URL(base);
  url.pathname = `/${decodeURIComponent(url.pathname.replace(/^\//, ''))}${suffix}`;
  return url.toString();
}

export function parseSystems(list: string): SystemId[] {
  const chosen = new Set<SystemId>();
  for (const name of list.split(',').map((part) => part.trim().toLowerCase()).filter((part) => part !== '')) {
    const ids = (SYSTEM_IDS as readonly string[]).includes(name) ? [name as SystemId] : ALIASES[name];
    if (!ids) throw new Error(`Unknown system "${name}" in --systems: use ${[...SYSTEM_IDS, ...Object.keys(ALIASES)].join(', ')}.`);
    for (const id of ids) chosen.add(id);
  }
  return [...chosen];
}

export const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));
const PYTHON_DIR = fileURLToPath(new URL('../python', import.meta.url));
const REPO_TSCONFIG = fileURLToPath(new URL('../../tsconfig.json', import.meta.url));
const RUNNERS_TSCONFIG = fileURLToPath(new URL('../tsconfig.runners.json', import.meta.url));
const BUILT_PACKAGES = ['core', 'redis', 'amqp', 'postgres', 'worker'].map((name) => fileURLToPath(new URL(`../../packages/${name}/dist/index.js`, import.meta.url)));

/**
 * Whether runners load kq as built (packages/dist, tsup's output: what users install and run) or from the
 * TypeScript sources (compiled by tsx on the fly). `pnpm bench` builds first, so it measures the built packages;
 * the sources are the fallback of a checkout that was not built (the bench's own tests on a fresh clone).
 */
export function kqBuild(): { built: boolean; tsconfig: string } {
  const built = BUILT_PACKAGES.every((file) => existsSync(file));
  return { built, tsconfig: built ? RUNNERS_TSCONFIG : REPO_TSCONFIG };
}
export const PYTHON = process.env['KQ_PYTHON'] ?? '/usr/bin/python3';

let compiledRunnersDir: string | null = null;

/**
 * Node runners start from `dir` (bundled by compile-runners.ts: plain `node <system>.mjs`) instead of under tsx.
 * Only with kq built: from the TypeScript sources, kq itself needs tsx.
 */
export function useCompiledRunners(dir: string | null): void {
  compiledRunnersDir = dir;
}

/** tsx's loader, so runners start as `node --import tsx <runner>.ts` (no extra wrapper process to kill). */
export function tsxLoader(): string {
  return pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
}

/**
 * How to start `system` for `spec`: Node runners are `runners/<system>.ts`, compiled to plain JavaScript when kq is
 * built ({@link useCompiledRunners}), else run under tsx with @kq/* from the TypeScript sources; Python Celery is Debian's celery
 * with the fixture app in python/, its workers started the way users start them (`python3 -m celery worker`).
 */
export function runnerCommand(system: SystemId, spec: RunnerSpec, label: string): RunnerCommand {
  const env: NodeJS.ProcessEnv = { ...process.env, [SPEC_ENV]: JSON.stringify(spec), NO_COLOR: '1' };
  if (system !== 'python-celery') {
    if (compiledRunnersDir !== null) {
      return { label, command: process.execPath, args: [...runnerNodeFlags(), join(compiledRunnersDir, `${system}.mjs`)], cwd: BENCH_DIR, env };
    }
    return {
      label,
      command: process.execPath,
      args: [...runnerNodeFlags(), '--import', tsxLoader(), fileURLToPath(new URL(`./runners/${system}.ts`, import.meta.url))],
      cwd: BENCH_DIR,
      env: { ...env, TSX_TSCONFIG_PATH: kqBuild().tsconfig },
    };
  }
  const pythonEnv: NodeJS.ProcessEnv = {
    ...env,
    KQBENCH_BROKER: spec.url,
    KQBENCH_BACKEND: spec.backend ?? '',
    KQBENCH_QUEUE: spec.queue,
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
    C_FORCE_ROOT: '1',
  };
  if (spec.role === 'drain' || spec.role === 'serve') {
    const pool = spec.variant === 'prefork' ? ['--pool', 'prefork', '--concurrency', String(spec.concurrency)] : ['--pool', 'solo'];
    return {
      label,
      command: PYTHON,
      args: [
        '-m', 'celery', '-A', 'kqbench_celery', 'worker', ...pool,
        '--loglevel', 'WARNING', '--without-heartbeat', '--without-mingle', '--without-gossip',
        '-Q', spec.queue, '--hostname', `kqbench-py-${spec.variant ?? 'solo'}@%h`,
      ],
      cwd: PYTHON_DIR,
      env: pythonEnv,
    };
  }
  return { label, command: PYTHON, args: ['celery_client.py'], cwd: PYTHON_DIR, env: pythonEnv };
}

/** Extra node flags for runners: `KQBENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof"` to profile them. */
function runnerNodeFlags(): string[] {
  const flags = process.env['KQBENCH_NODE_FLAGS'];
  return flags ? flags.split(/\s+/).filter((flag) => flag !== '') : [];
}
