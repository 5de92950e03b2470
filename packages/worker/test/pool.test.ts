import { fileURLToPath } from 'node:url';
import { MemoryBroker } from '@kq/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskFailedError } from '../src/errors/errors';
import { Logger, type LogRecord } from '../src/log/logger';
import { ChildPool } from '../src/pool/child-pool';
import type { Worker } from '../src/runtime/worker';
import { app, tasks } from './fixtures/pool/pool-app';

// Thread and process pools: every child imports the fixture app module itself and runs tasks by name.
const appModule = fileURLToPath(new URL('./fixtures/pool/pool-app.ts', import.meta.url));

async function waitFor(predicate: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(['processes', 'threads'] as const)('the %s pool', (kind) => {
  let worker: Worker;
  let pool: ChildPool;
  const logs: LogRecord[] = [];
  const broker = `pool-test-${kind}-${process.pid}`;

  beforeAll(async () => {
    MemoryBroker.reset(broker);
    app.conf.broker = `memory://${broker}`;
    app.conf.backend = `memory://${broker}`;
    worker = app.worker({
      pool: kind,
      appModule,
      concurrency: 2,
      hostname: `pool-${kind}@test`,
      logger: new Logger('test', { level: 'info', sink: (record) => void logs.push(record) }),
    });
    await worker.start();
    pool = worker.pool as ChildPool;
  });

  afterAll(async () => {
    await worker.stop({ cold: true });
    await app.close();
    MemoryBroker.reset(broker);
  });

  it('runs tasks in children that loaded the app themselves', async () => {
    expect(pool).toBeInstanceOf(ChildPool);
    expect(pool.childIds).toHaveLength(2);
    const where = await (await tasks.where.delay()).get({ timeout: 10_000 });
    expect(where.child).toBe(kind);
    if (kind === 'processes') expect(pool.childIds).toContain(where.pid);
    else expect(pool.childIds).toContain(where.threadId);
    expect(await (await tasks.add.delay(20, 22)).get({ timeout: 10_000 })).toBe(42);
  });

  it('passes Dates and Buffers through unchanged', async () => {
    const date = new Date('2024-05-06T07:08:09.123Z');
    const dated = await (await tasks.echo.delay(date)).get({ timeout: 10_000 });
    expect(dated.isDate).toBe(true);
    const bytes = await (await tasks.echo.delay(Buffer.from([0, 1, 2, 255]))).get({ timeout: 10_000 });
    expect(bytes.isBuffer).toBe(true);
  });

  it('sends task log lines to the worker logger', async () => {
    const text = `hello from a ${kind} child`;
    expect(await (await tasks.log.delay(text)).get({ timeout: 10_000 })).toBe('logged');
    expect(logs).toContainEqual(expect.objectContaining({ level: 'warning', logger: 'pool.log', message: text }));
  });

  it('keeps the class, name, message and stack of errors thrown in a child', async () => {
    const custom = await tasks.custom.delay();
    const error = await custom.get({ timeout: 10_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskFailedError);
    const meta = await custom.meta();
    expect(meta?.status).toBe('FAILURE');
    expect(meta?.result).toMatchObject({ exc_type: 'CustomError', exc_message: ['custom failure'] });
    expect(meta?.traceback).toContain('pool-app.ts');
    const range = await tasks.range.delay();
    await range.get({ timeout: 10_000 }).catch(() => undefined);
    expect((await range.meta())?.result).toMatchObject({ exc_type: 'ValueError', exc_module: 'builtins' });
  });

  it('retries from the child with ctx.retry() and autoretryFor', async () => {
    expect(await (await tasks.retryOnce.delay()).get({ timeout: 10_000 })).toBe(`ran after 1 retry in ${kind}`);
    expect(await (await tasks.autoretry.delay()).get({ timeout: 10_000 })).toBe(1);
  });

  it('honours Reject and Ignore thrown in a child', async () => {
    const rejected = await tasks.reject.delay();
    await waitFor(() => logs.some((record) => record.message.includes(`${rejected.id}] rejected (requeue=false)`)));
    expect(await rejected.state()).toBe('REJECTED');
    const ignored = await tasks.ignore.delay();
    await waitFor(() => logs.some((record) => record.message.includes(`Task pool.ignore[${ignored.id}] received`)));
    await waitFor(() => ![...worker.state.reserved].some((request) => request.id === ignored.id));
    expect(await ignored.state()).toBe('PENDING');
  });

  it('fails a task whose value cannot cross back, and carries on', async () => {
    const result = await tasks.unsendable.delay();
    await expect(result.get({ timeout: 10_000 })).rejects.toThrow(/cannot be sent back/);
    expect(await (await tasks.add.delay(1, 1)).get({ timeout: 10_000 })).toBe(2);
  });

  it('aborts the task signal in the child at the soft time limit', async () => {
    const result = await tasks.waitForAbort.applyAsync([], { softTimeLimit: 0.2 });
    expect(await result.get({ timeout: 10_000 })).toBe('aborted: SoftTimeLimitExceeded');
  });

  it('kills and replaces the child of a spinning task at the hard time limit, after the soft one', async () => {
    const before = pool.childIds;
    const spinning = await tasks.spin.applyAsync([], { softTimeLimit: 0.2, timeLimit: 0.6 });
    await waitFor(() => pool.runningOn(spinning.id) !== undefined);
    const victim = pool.runningOn(spinning.id) as number;
    const error = await spinning.get({ timeout: 15_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskFailedError);
    expect((error as TaskFailedError).excType).toBe('TimeLimitExceeded');
    await waitFor(() => pool.childIds.length === 2 && !pool.childIds.includes(victim));
    expect(pool.childIds.filter((id) => before.includes(id))).toHaveLength(1);
    expect(await (await tasks.add.delay(2, 2)).get({ timeout: 15_000 })).toBe(4);
  });

  it('kills the child of a task revoked with terminate, even past its soft time limit', async () => {
    const spinning = await tasks.spin.applyAsync([], { softTimeLimit: 0.1 });
    await waitFor(() => pool.runningOn(spinning.id) !== undefined);
    await waitFor(() => logs.some((record) => record.message.startsWith('Soft time limit') && record.message.includes(spinning.id)));
    const victim = pool.runningOn(spinning.id) as number;
    await app.control.revoke(spinning.id, { terminate: true });
    await waitFor(() => !pool.childIds.includes(victim));
    await waitFor(() => logs.some((record) => record.message.includes(`${spinning.id}] terminated`)));
    expect(await spinning.state()).toBe('REVOKED');
    await waitFor(() => pool.childIds.length === 2);
    expect(await (await tasks.add.delay(3, 3)).get({ timeout: 15_000 })).toBe(6);
  });

  it('fails the task of a child that exits mid-task with WorkerLostError and replaces the child', async () => {
    const crashed = await tasks.exit.delay();
    const error = await crashed.get({ timeout: 15_000 }).catch((e: unknown) => e);
    expect((error as TaskFailedError).excType).toBe('WorkerLostError');
    expect((await crashed.meta())?.result).toMatchObject({ exc_module: 'celery.exceptions' });
    await waitFor(() => pool.childIds.length === 2);
    expect(await (await tasks.add.delay(4, 4)).get({ timeout: 15_000 })).toBe(8);
  });
});
