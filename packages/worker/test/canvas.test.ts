import { MemoryBroker } from '@kq/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { Chain, Group, Signature, chain, chord, group } from '../src/canvas/index';
import { ImproperlyConfigured, TaskFailedError } from '../src/errors/errors';
import { Logger } from '../src/log/logger';
import { GroupResult } from '../src/results/index';
import type { Worker } from '../src/runtime/worker';

let seq = 0;

describe('canvas on memory://', () => {
  let app: App;
  let worker: Worker;

  beforeEach(async () => {
    seq++;
    const name = `canvas-test-${seq}`;
    MemoryBroker.reset(name);
    app = new App('test', { broker: `memory://${name}`, backend: `memory://${name}` });
  });

  afterEach(async () => {
    await worker?.stop({ cold: true });
    await app.close();
  });

  const start = async (): Promise<void> => {
    worker = app.worker({ hostname: `canvas${seq}@test`, concurrency: 8, logger: new Logger('test', { level: 'error', sink: () => undefined }) });
    await worker.start();
  };

  const tasks = () => {
    const add = app.task('t.add', (_ctx, x: number, y: number) => x + y, { params: ['x', 'y'] });
    const mul = app.task('t.mul', (_ctx, x: number, y: number) => x * y);
    const tsum = app.task('t.tsum', (_ctx, values: number[]) => values.reduce((a, b) => a + b, 0));
    const boom = app.task('t.boom', () => {
      throw new RangeError('no');
    });
    const record = app.task('t.record', (_ctx, id: string) => `errback:${id}`);
    return { add, mul, tsum, boom, record };
  };

  it('a chain passes each result to the next step and returns the last one, with parents', async () => {
    const { add, mul } = tasks();
    await start();
    const result = await chain(add.s(2, 2), add.s(4), mul.s(10)).delay();
    expect(await result.get({ timeout: 5000 })).toBe(80);
    expect(result.parent?.id).toBeTypeOf('string');
    const second = result.parent as typeof result;
    expect(await second.get({ timeout: 5000 })).toBe(8);
  });

  it('an immutable step ignores the previous result', async () => {
    const { add } = tasks();
    await start();
    const result = await chain(add.s(1, 1), add.si(10, 10)).delay();
    expect(await result.get({ timeout: 5000 })).toBe(20);
  });

  it('a group gives its members results in order, as a GroupResult with one group id', async () => {
    const { add } = tasks();
    await start();
    const result = await group([add.s(1, 1), add.s(2, 2), add.s(3, 3)]).delay();
    expect(result).toBeInstanceOf(GroupResult);
    expect(await result.join({ timeout: 5000 })).toEqual([2, 4, 6]);
    expect(await result.completedCount()).toBe(3);
    expect(await result.ready()).toBe(true);
    const metas = await Promise.all(result.results.map((member) => (member as unknown as { meta(): Promise<{ group_id?: string } | null> }).meta()));
    expect(new Set(metas.map((meta) => meta?.group_id))).toEqual(new Set([result.id]));
  });

  it('a chord runs its body once with every header result, in header order', async () => {
    const { add, tsum } = tasks();
    await start();
    const header = Array.from({ length: 10 }, (_, i) => add.s(i, i));
    const result = await chord(header, tsum.s()).delay();
    expect(await result.get({ timeout: 5000 })).toBe(90);
    expect(result.parent).toBeInstanceOf(GroupResult);
  });

  it('a group followed by a task in a chain is upgraded to a chord', async () => {
    const { add, tsum, mul } = tasks();
    await start();
    const result = await chain(add.s(1, 1), group([add.s(1), add.s(2)]), tsum.s(), mul.s(3)).delay();
    // 2 → [3, 4] → 7 → 21
    expect(await result.get({ timeout: 5000 })).toBe(21);
  });

  it('a failing header task fails the body with ChordError and sends its errback once', async () => {
    const { add, tsum, boom, record } = tasks();
    await start();
    const body = tsum.s();
    body.linkError(record.s());
    const result = await chord([add.s(1, 1), boom.s()], body).delay();
    const error = await result.get({ timeout: 5000 }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(TaskFailedError);
    expect((error as TaskFailedError).excType).toBe('ChordError');
    expect((error as TaskFailedError).message).toMatch(/Dependency .* raised ValueError\('no'\)/);
  });

  it('link and link_error send callbacks and errbacks with the result and the id', async () => {
    const { add, boom, record } = tasks();
    const seen: unknown[] = [];
    const collect = app.task('t.collect', (_ctx, value: unknown) => {
      seen.push(value);
      return value;
    });
    await start();
    await add.applyAsync([5, 5], { link: collect.s() });
    const failed = await boom.applyAsync([], { linkError: collect.s() });
    await expect(failed.get({ timeout: 5000 })).rejects.toThrow();
    await expect.poll(() => seen.length, { timeout: 5000 }).toBe(2);
    expect(seen).toContain(10);
    expect(seen).toContain(failed.id);
    void record;
  });

  it('a forwarded step keeps its queue, routing and priority options', async () => {
    const { add } = tasks();
    const sent: Array<{ name: string; queue?: string | undefined; priority?: number | undefined }> = [];
    const send = app.sendTaskMessage.bind(app);
    app.sendTaskMessage = (name, args, options, embed) => {
      sent.push({ name, queue: options.queue, priority: options.priority });
      return send(name, args, options, embed);
    };
    worker = app.worker({ hostname: `canvas${seq}@test`, queues: ['celery', 'other'], logger: new Logger('test', { level: 'error', sink: () => undefined }) });
    await worker.start();
    const result = await chain(add.s(1, 1), add.s(1).set({ queue: 'other', priority: 7, countdown: 0 })).delay();
    expect(await result.get({ timeout: 5000 })).toBe(3);
    expect(sent.find((entry) => entry.queue === 'other')).toMatchObject({ name: 't.add', priority: 7 });
  });

  it('a nested chain of groups and chords completes', async () => {
    const { add, tsum } = tasks();
    await start();
    const inner = chord([add.s(1, 1), add.s(2, 2)], tsum.s());
    const result = await chain(inner, add.s(100)).delay();
    expect(await result.get({ timeout: 5000 })).toBe(106);
    const nested = await group([chain(add.s(1, 1), add.s(1)), chain(add.s(2, 2), add.s(2))]).delay();
    expect(await nested.join({ timeout: 5000 })).toEqual([3, 6]);
  });

  it('map, starmap and chunks run in the worker', async () => {
    const { add, tsum } = tasks();
    await start();
    expect(await (await tsum.map([[1, 2], [3]]).delay()).get({ timeout: 5000 })).toEqual([3, 3]);
    expect(await (await add.starmap([[1, 2], [3, 4]]).delay()).get({ timeout: 5000 })).toEqual([3, 7]);
    const chunks = await add.chunks([[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]], 2).delay();
    expect(await chunks.join({ timeout: 5000 })).toEqual([[2, 4], [6, 8], [10]]);
  });

  it('ctx.replace runs the replacement under the task id, then the rest of the chain', async () => {
    const { add, mul } = tasks();
    const swap = app.task('t.swap', (ctx, x: number) => ctx.replace(chain(add.s(x, 1), mul.s(2))));
    const toGroup = app.task('t.togroup', (ctx, x: number) => ctx.replace(group([add.s(x, 1), add.s(x, 2)])));
    await start();
    const replaced = await swap.delay(4);
    expect(await replaced.get({ timeout: 5000 })).toBe(10);
    const chained = await chain(swap.s(4), add.s(1)).delay();
    expect(await chained.get({ timeout: 5000 })).toBe(11);
    expect(await (await toGroup.delay(1)).get({ timeout: 5000 })).toEqual([2, 3]);
    const inChord = app.task('t.inchord', (ctx) => ctx.replace(Signature.fromJSON({ ...add.s(1, 1).toJSON(), options: { chord: 'x' } }, app)));
    void inChord;
    expect(() => new Chain([])).not.toThrow();
    expect(ImproperlyConfigured).toBeDefined();
  });

  it('signatures round-trip through their JSON form as the composite types they are', () => {
    const { add, tsum } = tasks();
    const canvas = chain(add.s(1, 1), chord([add.s(1), add.s(2)], tsum.s()), group([add.s(3), add.s(4)]));
    const json = JSON.parse(JSON.stringify(canvas)) as ReturnType<typeof canvas.toJSON>;
    expect(json.subtask_type).toBe('chain');
    const back = Signature.fromJSON(json, app) as Chain;
    expect(back).toBeInstanceOf(Chain);
    expect(back.tasks.map((task) => task.subtaskType)).toEqual([null, 'chord', 'group']);
    expect(back.tasks[2]).toBeInstanceOf(Group);
    expect(JSON.parse(JSON.stringify(back))).toEqual(json);
  });

  it('a GroupResult is saved and restored from its id alone, and revokes its members', async () => {
    const { add } = tasks();
    await start();
    const result = await group([add.s(1, 1), add.s(2, 2)]).delay();
    await result.save();
    const backend = await app.backend();
    const restored = await GroupResult.restore(result.id, backend as NonNullable<typeof backend>, app.revoker);
    expect(restored?.taskIds()).toEqual(result.taskIds());
    expect(await restored?.join({ timeout: 5000 })).toEqual([2, 4]);
    const revoked: string[][] = [];
    await new GroupResult(result.id, result.results, app, async (ids) => void revoked.push([...ids])).revoke();
    expect(revoked).toEqual([result.taskIds()]);
    await result.delete();
    expect(await GroupResult.restore(result.id, backend as NonNullable<typeof backend>)).toBeNull();
  });

  it('results record the tasks a run sent as children', async () => {
    const { add } = tasks();
    const parent = app.task('t.parent', async () => {
      await add.delay(1, 2);
      return 'ok';
    });
    await start();
    const result = await parent.delay();
    await result.get({ timeout: 5000 });
    const meta = await result.meta();
    expect(meta?.children).toHaveLength(1);
  });
});
