import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Queue } from '@kq/core';
import { duplicatesOf, messageIds, quietPeriod, testMessage, waitFor } from '@kq/test-harness';
import { FileSystemTransport } from '../src/index';

const here = dirname(fileURLToPath(import.meta.url));
const repositoryRoot = join(here, '..', '..', '..');
const workerScript = join(here, 'fixtures', 'consumer-process.ts');

/** A consumer process and the ids it reported as acked. */
interface Worker {
  readonly child: ChildProcessWithoutNullStreams;
  readonly acked: string[];
  /** Acked ids that arrived marked redelivered. */
  readonly redelivered: string[];
  readonly failures: string[];
  /** Ids it received after `holdAfter` acks and holds unacked. */
  readonly holding: string[];
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  /** What it wrote to stderr, for failure messages. */
  stderr(): string;
}

function startWorker(root: string, queue: string, visibilityTimeoutMs: number, holdAfter?: number): Worker {
  // tsx resolves the workspace packages through the root tsconfig's `paths`, as vitest does through aliases.
  const args = [workerScript, root, queue, String(visibilityTimeoutMs), ...(holdAfter === undefined ? [] : [String(holdAfter)])];
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: repositoryRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const acked: string[] = [];
  const redelivered: string[] = [];
  const failures: string[] = [];
  const holding: string[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line === 'ready') resolve();
      else if (line.startsWith('acked ')) {
        const [, id, flag] = line.split(' ');
        acked.push(id as string);
        if (flag === 'redelivered') redelivered.push(id as string);
      }
      else if (line.startsWith('holding ')) holding.push(line.slice('holding '.length));
      else if (line.startsWith('ack-failed ')) failures.push(line);
    });
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before it was ready: ${stderr}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, acked, redelivered, failures, holding, ready, exited, stderr: () => stderr };
}

async function stop(worker: Worker): Promise<number | null> {
  if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.stdin.end('stop\n');
  return worker.exited;
}

describe('FileSystemTransport shared by two processes', () => {
  let root: string;
  let workers: Worker[] = [];

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'kq-fs-processes-'));
  });

  afterEach(async () => {
    for (const worker of workers) {
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    }
    await Promise.all(workers.map((worker) => worker.exited));
    workers = [];
    await rm(root, { recursive: true, force: true });
  });

  async function publish(queue: string, ids: readonly string[]): Promise<void> {
    const transport = new FileSystemTransport({ root });
    try {
      const channel = await transport.createChannel();
      await channel.declareQueue(new Queue(queue));
      for (const id of ids) await channel.publish('', queue, testMessage(id));
    } finally {
      await transport.close();
    }
  }

  // "Each process did part of the work" depends on both processes polling while the 400 messages last: on a loaded
  // 2-core machine one process once took them all. Retried once; the exactly-once checks hold on every try.
  it('two consumer processes share one queue: every message processed exactly once', { timeout: 60_000, retry: 1 }, async () => {
    const queue = 'shared.work';
    workers = [startWorker(root, queue, 5_000), startWorker(root, queue, 5_000)];
    await Promise.all(workers.map((worker) => worker.ready));
    const ids = messageIds('job', 400);
    await publish(queue, ids);
    const acked = (): string[] => workers.flatMap((worker) => worker.acked);
    await waitFor(
      () => acked().length >= ids.length,
      30_000,
      () => `${ids.length} acks from the workers; ${acked().length} so far. stderr: ${workers.map((worker) => worker.stderr()).join(' | ')}`,
    );
    await quietPeriod(300);
    expect(await Promise.all(workers.map(stop))).toEqual([0, 0]);
    expect(workers.flatMap((worker) => worker.failures)).toEqual([]);
    expect(workers.flatMap((worker) => worker.redelivered), 'redeliveries without any failure').toEqual([]);
    expect(duplicatesOf(acked()), 'messages processed twice').toEqual([]);
    expect([...acked()].sort()).toEqual([...ids].sort());
    for (const worker of workers) expect(worker.acked.length, 'each process did part of the work').toBeGreaterThan(0);
  });

  it('a consumer process killed mid-stream: the other one gets its messages after the visibility timeout', async () => {
    const queue = 'shared.crash';
    const visibilityTimeoutMs = 1_000;
    // It acks 20, then holds a full prefetch window (8) unacked: that is what the kill strands.
    const doomed = startWorker(root, queue, visibilityTimeoutMs, 20);
    workers = [doomed];
    await doomed.ready;
    const ids = messageIds('job', 200);
    await publish(queue, ids);
    await waitFor(
      () => doomed.acked.length >= 20 && doomed.holding.length >= 8,
      20_000,
      () => `the first worker to ack 20 and hold 8; it acked ${doomed.acked.length} and holds ${doomed.holding.length}. stderr: ${doomed.stderr()}`,
    );
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    const survivor = startWorker(root, queue, visibilityTimeoutMs);
    workers.push(survivor);
    await survivor.ready;
    const acked = (): string[] => [...doomed.acked, ...survivor.acked];
    await waitFor(
      () => acked().length >= ids.length,
      30_000,
      () => `${ids.length} acks in total; ${acked().length} so far; missing ${ids.filter((id) => !acked().includes(id)).slice(0, 10).join(', ')}. stderr: ${survivor.stderr()}`,
    );
    await quietPeriod(300);
    expect(await stop(survivor)).toBe(0);
    expect(survivor.failures).toEqual([]);
    // What the killed worker held came back, marked redelivered.
    expect([...survivor.redelivered].sort(), 'messages recovered from the killed worker').toEqual([...doomed.holding].sort());
    expect(duplicatesOf(acked()), 'messages acked twice').toEqual([]);
    expect([...acked()].sort()).toEqual([...ids].sort());
  }, 60_000);
});
