// The machine and the versions a result was measured with, for RESULTS.md.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BENCH_DIR, PYTHON } from './systems';

const run = promisify(execFile);

export interface MachineInfo {
  date: string;
  cpu: string;
  cores: number;
  memory: string;
  os: string;
  node: string;
  redis: string;
  rabbitmq: string;
  postgres: string;
  python: string;
  kq: string;
  packages: Record<string, string>;
  loadBefore: string;
  loadAfter: string;
}

const PEER_PACKAGES = ['bullmq', 'bee-queue', 'celery-node', 'ioredis', 'amqplib', 'tsx'];

export async function collectMachineInfo(versions: { redis: string; rabbitmq: string; postgres: string }): Promise<MachineInfo> {
  const cpus = os.cpus();
  const packages: Record<string, string> = {};
  for (const name of PEER_PACKAGES) packages[name] = await packageVersion(name);
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    cpu: `${cpus[0]?.model.trim() ?? 'unknown'}${cpus[0]?.speed ? ` @ ${cpus[0].speed} MHz` : ''}`,
    cores: cpus.length,
    memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    os: `${os.type()} ${os.release()} (${os.arch()})`,
    node: process.version,
    redis: versions.redis,
    rabbitmq: versions.rabbitmq,
    postgres: versions.postgres,
    python: await pythonVersions(),
    kq: await kqRevision(),
    packages,
    loadBefore: loadAverage(),
    loadAfter: '',
  };
}

export function loadAverage(): string {
  return os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' / ');
}

async function packageVersion(name: string): Promise<string> {
  for (const base of [join(BENCH_DIR, 'node_modules'), join(BENCH_DIR, '..', 'node_modules')]) {
    try {
      const manifest = JSON.parse(await readFile(join(base, name, 'package.json'), 'utf8')) as { version?: string };
      if (manifest.version) return manifest.version;
    } catch {
      // not installed here; try the next place
    }
  }
  return 'not installed';
}

async function pythonVersions(): Promise<string> {
  try {
    const { stdout } = await run(PYTHON, ['-c', 'import sys, celery, kombu; print("Python %s, celery %s, kombu %s" % (sys.version.split()[0], celery.__version__, kombu.__version__))'], {
      timeout: 20_000,
    });
    return stdout.trim();
  } catch (error) {
    return `unavailable (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
  }
}

async function kqRevision(): Promise<string> {
  try {
    const cwd = join(BENCH_DIR, '..');
    const { stdout: head } = await run('git', ['rev-parse', '--short', 'HEAD'], { cwd });
    const { stdout: status } = await run('git', ['status', '--porcelain', '--', 'packages'], { cwd });
    return `${head.trim()}${status.trim() === '' ? '' : ' + uncommitted changes in packages/'}`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}
