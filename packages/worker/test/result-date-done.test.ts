/**
 * `resultDateDone`: results' `date_done` in Celery 5.3+'s aware form (default) or Celery 5.2's naive one, which a
 * 5.2 fleet needs — its `datetime.utcnow() - result.date_done` raises TypeError on the aware form.
 */
import { randomUUID } from 'node:crypto';
import { MemoryBroker } from '@kq/core';
import { brokerReachable, pythonAvailable } from '@kq/test-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { ImproperlyConfigured } from '../src/errors/errors';
import { Logger } from '../src/log/logger';
import { formatDateDone } from '../src/results/index';
import type { Worker } from '../src/runtime/worker';
import { runPythonClient } from './fixtures/python-client';

const quiet = (): Logger => new Logger('date-done', { level: 'critical', sink: () => undefined });
const AWARE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?\+00:00$/;
const NAIVE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?$/;

describe('formatDateDone', () => {
  it("writes 5.2's naive form as the same UTC instant without the offset", () => {
    const date = new Date(Date.UTC(2026, 10, 21, 13, 12, 5, 748));
    expect(formatDateDone(date, 'aware')).toBe('2026-11-21T13:12:05.748000+00:00');
    expect(formatDateDone(date, 'naive')).toBe('2026-11-21T13:12:05.748000');
    expect(formatDateDone(new Date(Date.UTC(2026, 10, 21, 13, 12, 5)), 'naive')).toBe('2026-11-21T13:12:05');
  });

  it('is an app setting under both names, refused when it is neither form', () => {
    expect(new App('a', { broker: 'memory://date-done-conf' }).conf.resultDateDone).toBe('aware');
    expect(new App('a', { broker: 'memory://date-done-conf', result_date_done: 'naive' }).conf.resultDateDone).toBe('naive');
    // @ts-expect-error — only 'aware' or 'naive'
    expect(() => new App('a', { broker: 'memory://date-done-conf', resultDateDone: 'utc' })).toThrow(ImproperlyConfigured);
  });
});

describe('date_done as stored by a worker', () => {
  let app: App | undefined;
  let worker: Worker | undefined;

  afterEach(async () => {
    await worker?.stop({ cold: true });
    await app?.close();
  });

  const storedDateDone = async (config: Record<string, unknown>, fail = false): Promise<unknown> => {
    const broker = `date-done-${randomUUID()}`;
    MemoryBroker.reset(broker);
    app = new App('date-done', { broker: `memory://${broker}`, backend: `memory://${broker}`, ...config });
    const task = app.task('date_done.task', () => {
      if (fail) throw new Error('no');
      return 1;
    });
    worker = app.worker({ hostname: 'w@date-done', logger: quiet() });
    await worker.start();
    const result = await task.delay();
    await result.get({ timeout: 5000, propagate: false });
    return (await result.meta())?.date_done;
  };

  it("is aware by default (Celery 5.3+'s form)", async () => {
    expect(await storedDateDone({})).toMatch(AWARE);
  });

  it('is naive with resultDateDone: naive, for successes and failures', async () => {
    expect(await storedDateDone({ resultDateDone: 'naive' })).toMatch(NAIVE);
    await worker?.stop({ cold: true });
    await app?.close();
    expect(await storedDateDone({ resultDateDone: 'naive' }, true)).toMatch(NAIVE);
  });
});

const REDIS = 'redis://127.0.0.1:6379/11';
const interop = (await brokerReachable('redis', REDIS)) && (await pythonAvailable(['celery']));

describe.skipIf(!interop)("Python Celery reads kq's date_done (Redis)", () => {
  let app: App | undefined;
  let worker: Worker | undefined;

  afterEach(async () => {
    await worker?.stop();
    await app?.close();
  });

  const pythonAge = async (form: 'aware' | 'naive'): Promise<Record<string, unknown>> => {
    const queue = `kqdd${randomUUID().slice(0, 8)}`;
    app = new App('date-done', { broker: REDIS, backend: REDIS, taskDefaultQueue: queue, resultDateDone: form });
    const task = app.task('date_done.interop', () => 1);
    worker = app.worker({ hostname: `kq@${queue}`, logger: quiet(), cluster: false });
    await worker.start();
    const result = await task.delay();
    expect(await result.get({ timeout: 10_000 })).toBe(1);
    return runPythonClient('date_done_reader.py', { id: result.id }, { KQ_INTEROP_BACKEND: REDIS });
  };

  it('naive: utcnow() - result.date_done works in Python', async () => {
    const outcome = await pythonAge('naive');
    expect(outcome).not.toHaveProperty('exc_type');
    expect(typeof outcome['age']).toBe('number');
  });

  it('aware (the default): the same arithmetic raises TypeError, which is why the setting exists', async () => {
    const outcome = await pythonAge('aware');
    expect(outcome['exc_type']).toBe('TypeError');
  });
});
