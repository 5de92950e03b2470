import { fileURLToPath } from 'node:url';
import { MemoryBroker } from '@kq/core';
import { afterEach, describe, expect, it } from 'vitest';
import { TaskFailedError } from '../src/errors/errors';
import { Logger, type LogRecord } from '../src/log/logger';
import type { ChildPool } from '../src/pool/child-pool';
import type { Request } from '../src/runtime/request';
import type { Worker, WorkerOptions } from '../src/runtime/worker';
import { app, tasks, type Where } from './fixtures/pool/pool-app';

// Child recycling (maxTasksPerChild, maxMemoryPerChild) and children killed mid-task
// (docs/wire.md#when-a-task-message-is-acknowledged).
const appModule = fileURLToPath(new URL('./fixtures/pool/pool-app.ts', import.meta.url));

async function waitFor(predicate: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let worker: Worker | undefined;
let seq = 0;
const logs: LogRecord[] = [];

async function startWorker(options: WorkerOptions): Promise<{ worker: Worker; pool: ChildPool }> {
  const broker = `pool-lifecycle-${process.pid}-${++seq}`;
  MemoryBroker.reset(broker);
  app.conf.broker = `memory://${broker}`;
  app.conf.backend = `memory://${broker}`;
  logs.length = 0;
  worker = app.worker({
    appModule,
    concurrency: 1,
    hostname: `lifecycle-${seq}@test`,
    logger: new Logger('test', { level: 'info', sink: (record) => void logs.push(record) }),
    ...options,
  });
  await worker.start();
  return { worker, pool: worker.pool as ChildPool };
}

afterEach(async () => {
  await worker?.stop({ cold: true });
  worker = undefined;
  await app.close();
});

const childOf = (where: Where): number => (where.child === 'threads' ? where.threadId : where.pid);

describe('child recycling', () => {
  it('replaces a child after maxTasksPerChild tasks', async () => {
    await startWorker({ pool: 'processes', maxTasksPerChild: 2 });
    const ran: number[] = [];
    for (let i = 0; i < 5; i++) ran.push(childOf(await (await tasks.where.delay()).get({ timeout: 15_000 })));
    expect(ran[0]).toBe(ran[1]);
    expect(ran[2]).toBe(ran[3]);
    expect(new Set(ran).size).toBe(3);
  });

  it.each(['processes', 'threads'] as const)("a %s child's run stores the tasks it sent as its result's children", async (pool) => {
    await startWorker({ pool, concurrency: 2 });
    const result = await tasks.spawn.delay();
    expect(await result.get({ timeout: 15_000 })).toBe('sent');
    const children = (await result.meta())?.children as Array<[[string, null], null]>;
    expect(children).toHaveLength(1);
    expect(await (await app.asyncResult(children[0]?.[0][0] as string)).get({ timeout: 15_000 })).toBe(2);
  });

  it("inspect active reports the pid of the process-pool child running the task, as Celery's prefork pool does", async () => {
    const { worker } = await startWorker({ pool: 'processes' });
    const running = await tasks.sleep.delay(1500);
    await waitFor(() => worker.state.active.size === 1);
    const [request] = [...worker.state.active.values()] as Request[];
    const pid = request?.info().worker_pid;
    expect(pid).not.toBe(process.pid);
    expect((await running.get({ timeout: 15_000 })).pid).toBe(pid);
  });

  it.each(['processes', 'threads'] as const)('restart() (pool_restart) replaces every %s child', async (pool) => {
    const { pool: children } = await startWorker({ pool, concurrency: 2 });
    const before = childOf(await (await tasks.where.delay()).get({ timeout: 15_000 }));
    children.restart();
    const after = new Set<number>();
    for (let i = 0; i < 4; i++) after.add(childOf(await (await tasks.where.delay()).get({ timeout: 15_000 })));
    expect(after.has(before)).toBe(false);
  });

  it.each(['processes', 'threads'] as const)('replaces a %s child that grew over maxMemoryPerChild after its task', async (pool) => {
    // 200 MiB: far above an idle child (a process's RSS, a thread's heap), far below one holding 256 MiB more.
    await startWorker({ pool, maxMemoryPerChild: 200 * 1024 });
    const first = childOf(await (await tasks.where.delay()).get({ timeout: 15_000 }));
    expect(childOf(await (await tasks.where.delay()).get({ timeout: 15_000 }))).toBe(first);
    expect(childOf(await (await tasks.hog.delay(256)).get({ timeout: 15_000 }))).toBe(first);
    const next = childOf(await (await tasks.where.delay()).get({ timeout: 15_000 }));
    expect(next).not.toBe(first);
    expect(logs.some((record) => record.message.includes('over maxMemoryPerChild'))).toBe(true);
  });
});

describe('a child killed with SIGKILL mid-task', () => {
  const killWhenRunning = async (pool: ChildPool, taskId: string): Promise<number> => {
    await waitFor(() => pool.runningOn(taskId) !== undefined);
    const pid = pool.runningOn(taskId) as number;
    process.kill(pid, 'SIGKILL');
    return pid;
  };

  it('fails the task with WorkerLostError (acked) and replaces the child', async () => {
    const { worker, pool } = await startWorker({ pool: 'processes' });
    const requests = new Map<string, Request>();
    worker.on('task', (kind, request) => void (kind === 'received' && requests.set(request.id, request)));

    const early = await tasks.sleep.delay(10_000);
    const killed = await killWhenRunning(pool, early.id);
    const error = await early.get({ timeout: 15_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskFailedError);
    expect((error as TaskFailedError).excType).toBe('WorkerLostError');
    expect((error as TaskFailedError).message).toMatch(/signal 9 \(SIGKILL\)/);

    // Late ack without rejectOnWorkerLost: FAILURE stored and the message acked (Celery's acks_on_failure default).
    const late = await tasks.sleepAcksLate.delay(10_000);
    await killWhenRunning(pool, late.id);
    expect(((await late.get({ timeout: 15_000 }).catch((e: unknown) => e)) as TaskFailedError).excType).toBe('WorkerLostError');
    await waitFor(() => requests.get(late.id)?.delivery.state === 'acked');

    await waitFor(() => pool.childIds.length === 1 && !pool.childIds.includes(killed));
    expect(await (await tasks.add.delay(1, 2)).get({ timeout: 15_000 })).toBe(3);

    // A child that dies while idle is replaced too.
    const idle = pool.childIds[0] as number;
    process.kill(idle, 'SIGKILL');
    await waitFor(() => pool.childIds.length === 1 && !pool.childIds.includes(idle));
    expect(await (await tasks.add.delay(2, 3)).get({ timeout: 15_000 })).toBe(5);
    expect(logs.some((record) => record.level === 'error' && record.message.includes(`Pool child ${idle} exited with 'signal 9 (SIGKILL)'`))).toBe(true);
  });

  it('leaves SIGINT and SIGTERM sent to a child to the worker: the task finishes', async () => {
    const { pool } = await startWorker({ pool: 'processes' });
    const result = await tasks.sleep.delay(500);
    await waitFor(() => pool.runningOn(result.id) !== undefined);
    const pid = pool.runningOn(result.id) as number;
    process.kill(pid, 'SIGINT'); // what Ctrl+C sends to the whole process group
    process.kill(pid, 'SIGTERM');
    expect((await result.get({ timeout: 15_000 })).pid).toBe(pid);
    expect(pool.childIds).toEqual([pid]);
  });

  it('requeues the task with acksLate + rejectOnWorkerLost, and it is redelivered and runs again', async () => {
    const { worker, pool } = await startWorker({ pool: 'processes' });
    const events: string[] = [];
    worker.on('task', (kind, _request, fields) => events.push(kind === 'rejected' ? `rejected requeue=${String(fields['requeue'])}` : kind));

    const result = await tasks.sleepLate.delay(300);
    const killed = await killWhenRunning(pool, result.id);
    const timed = await result.get({ timeout: 20_000 });
    expect(timed.pid).not.toBe(killed);
    expect(await result.state()).toBe('SUCCESS');
    // No FAILURE and no task-failed in between: rejected with requeue, received again, then it succeeded. (The
    // redelivery may be received before the task-rejected event of the first delivery is emitted.)
    expect(events.slice(0, 2)).toEqual(['received', 'started']);
    expect(events.filter((kind) => kind === 'received')).toHaveLength(2);
    expect(events).toContain('rejected requeue=true');
    expect(events).not.toContain('failed');
    expect(events.at(-1)).toBe('succeeded');
  });
});

describe('a cold shutdown with acks-late tasks running in children', () => {
  it.each(['processes', 'threads'] as const)('%s: kills the children but gives the tasks back: no WorkerLostError, run again by the next worker', async (pool) => {
    const { worker: first } = await startWorker({ pool, concurrency: 2 });
    const results = await Promise.all([tasks.sleepAcksLate.delay(60_000), tasks.sleepAcksLate.delay(60_000)]);
    await waitFor(() => first.state.active.size === 2);
    await first.stop({ cold: true });
    expect(await Promise.all(results.map((result) => result.state()))).toEqual(['PENDING', 'PENDING']);
    expect(logs.some((record) => record.message.includes('returned to its queue'))).toBe(true);
    // The same broker, a new worker: both messages are there again.
    const next = app.worker({ appModule, pool: 'async', concurrency: 2, hostname: `after-cold-${pool}@test`, logger: new Logger('test', { level: 'critical', sink: () => undefined }) });
    worker = next;
    const runs: string[] = [];
    next.on('task', (kind, request) => {
      if (kind === 'started') runs.push(request.id);
    });
    await next.start();
    await waitFor(() => runs.length === 2);
    expect(runs.sort()).toEqual(results.map((result) => result.id).sort());
  });
});

describe('a pool whose children cannot load the app module', () => {
  it.each(['processes', 'threads'] as const)('%s: start() fails with the reason the child gave', async (pool) => {
    const broken = fileURLToPath(new URL('./fixtures/pool/broken-app.ts', import.meta.url));
    const quiet = new Logger('test', { level: 'critical', sink: () => undefined });
    const failing = app.worker({ pool, appModule: broken, concurrency: 2, hostname: `broken-${pool}@test`, logger: quiet });
    await expect(failing.start()).rejects.toThrow(/could not start: Error: broken on purpose/);
    expect(failing.isRunning).toBe(false);
    const missing = app.worker({ pool, appModule: '/nowhere/app.ts', concurrency: 1, hostname: `missing-${pool}@test`, logger: quiet });
    await expect(missing.start()).rejects.toThrow(/Cannot find the app module/);
  });
});
