/**
 * instanceof across copies of @kq/worker and @kq/core in one process (issue #30): a copy that does not claim its
 * package (an older release, a bundle, a vm context) still meets ours. Its classes are branded like ours, so kq's
 * checks hold for its objects, and the registries its objects are looked up in are process-wide.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import * as core from '@kq/core';
import { waitFor } from '@kq/test-harness';
import * as worker from '@kq/worker';
import { pipe } from '../src/canvas/pipe';
import { currentTask, runAsCurrentTask, type CurrentTask } from '../src/send/current-task';
import type * as CurrentTaskModule from '../src/send/current-task';

/** A second, complete copy of @kq/worker and its @kq/core (vitest evaluates every module again). */
let other: typeof worker;
let otherCore: typeof core;
let otherCurrentTask: typeof CurrentTaskModule;
beforeAll(async () => {
  vi.resetModules();
  other = await import('@kq/worker');
  otherCore = await import('@kq/core');
  otherCurrentTask = await import('../src/send/current-task');
  expect(otherCurrentTask.currentTask).not.toBe(currentTask);
  expect(other.App).not.toBe(worker.App);
  expect(otherCore.KqError).not.toBe(core.KqError);
});

const quiet = (): worker.Logger => new worker.Logger('test', { level: 'critical', sink: () => undefined });

describe('objects of another copy of @kq/worker', () => {
  it('are instances of our classes: errors, canvas, results, the App, the cluster steps', () => {
    const app = new other.App('brands', { broker: `memory://brands-${randomUUID()}` });
    const add = app.task('brands.add', (_ctx, x: number, y: number) => x + y);
    const total = app.task('brands.total', (_ctx, values: number[]) => values.reduce((sum, value) => sum + value, 0));
    expect(app).toBeInstanceOf(worker.App);
    expect(new other.Retry('again')).toBeInstanceOf(worker.Retry);
    expect(new other.Retry('again')).toBeInstanceOf(core.KqError);
    expect(new other.Retry('again')).not.toBeInstanceOf(worker.Reject);
    expect(new other.StopPeriodic('done')).toBeInstanceOf(worker.StopPeriodic);
    expect(new other.TaskFailedError('id', 'ValueError', ['x'], 'builtins', null)).toBeInstanceOf(worker.TaskFailedError);
    expect(add.s(1, 2)).toBeInstanceOf(worker.Signature);
    expect(add.s(1, 2)).not.toBeInstanceOf(worker.Group);
    const members = other.group([add.s(1, 2), add.s(3, 4)]);
    expect(members).toBeInstanceOf(worker.Group);
    expect(members).toBeInstanceOf(worker.Signature);
    expect(members).not.toBeInstanceOf(worker.Chain);
    expect(other.chain(add.s(1, 2), add.s(3))).toBeInstanceOf(worker.Chain);
    expect(other.chord([add.s(1, 2)], total.s())).toBeInstanceOf(worker.Chord);
    expect(new other.GroupResult('g', [], new otherCore.MemoryResultBackend())).toBeInstanceOf(worker.GroupResult);
    // Our canvas code reads theirs: their chain ending in their group, piped into a signature, ends in a chord.
    const piped = pipe(other.chain(add.s(0, 1), other.group([add.s(1, 2), add.s(3, 4)])), add.s(5));
    expect((piped as worker.Chain).tasks.at(-1)).toBeInstanceOf(worker.Chord);
    // Their cluster steps given to our worker are not added a second time.
    expect(worker.withClusterSteps(other.clusterSteps())).toHaveLength(other.clusterSteps().length);
  });

  it('exports no error class that is not branded', () => {
    for (const [name, value] of Object.entries(worker)) {
      if (typeof value !== 'function' || !Function.prototype[Symbol.hasInstance].call(Error, value.prototype)) continue;
      const id = core.isBrandedInstance(Object.create(value.prototype as object), `@kq/worker:${name}`) || core.isBrandedInstance(Object.create(value.prototype as object), `@kq/core:${name}`);
      expect(id, name).toBe(true);
    }
  });

  it('share our registries: the task running now, the cluster context that drives a worker', async () => {
    // A pool child's runtime (the kq CLI's copy) asks who sent a message from a task the app's copy runs.
    const task: CurrentTask = { request: { id: 'parent-id', rootId: null }, children: [] };
    expect(otherCurrentTask.runAsCurrentTask(task, () => currentTask())).toBe(task);
    expect(runAsCurrentTask(task, () => otherCurrentTask.currentTask())).toBe(task);
    // Cluster steps given twice, once from each copy: the second set stands aside.
    const app = new worker.App('brands', { broker: `memory://brands-${randomUUID()}` });
    const one = app.worker({ cluster: false, logger: quiet() });
    expect(new other.ClusterContext().claim(one)).toBe(true);
    expect(new worker.ClusterContext().claim(one)).toBe(false);
    expect(worker.clusterOf(one)).toBeInstanceOf(other.ClusterContext);
    await app.close();
  });

  it('run in our worker: their app\'s periodic task, a replace with their group, their Reject and Ignore, sends from a task', async () => {
    const name = `brands-${randomUUID()}`;
    const app = new other.App('brands', { broker: `memory://${name}`, backend: `memory://${name}` });
    const ticks: string[] = [];
    app.periodic('brands.tick', (ctx) => void ticks.push(ctx.request.id), { every: 0.05 });
    const add = app.task('brands.add', (_ctx, x: number, y: number) => x + y);
    const toGroup = app.task('brands.togroup', (ctx, x: number) => ctx.replace(other.group([add.s(x, 1), add.s(x, 2)])));
    const ignore = app.task('brands.ignore', () => {
      throw new other.Ignore('not stored');
    });
    const reject = app.task('brands.reject', () => {
      throw new other.Reject('not for us', false);
    });
    const child = app.task('brands.child', (ctx) => ctx.request.parentId);
    const parent = app.task('brands.parent', async () => (await child.delay()).id);

    const ours = new worker.Worker(app, { concurrency: 1, steps: [worker.periodicStep()], logger: quiet() });
    await ours.start();
    try {
      await waitFor(() => ticks.length >= 2, 10_000, 'two runs of the periodic task');
      expect(await (await toGroup.delay(4)).get({ timeout: 5_000 })).toEqual([5, 6]);
      const ignored = await ignore.delay();
      const rejected = await reject.delay(); // concurrency 1: runs after the ignored one
      await waitFor(async () => (await rejected.state()) !== 'PENDING', 5_000, 'the rejected task settled');
      expect(await rejected.state()).toBe('REJECTED');
      expect(await ignored.state()).toBe('PENDING');
      const sent = await parent.delay();
      const childId = (await sent.get({ timeout: 5_000 })) as string;
      expect(await (await app.asyncResult(childId)).get({ timeout: 5_000 })).toBe(sent.id);
    } finally {
      await ours.stop({ cold: true });
      await app.close();
    }
  });
});
