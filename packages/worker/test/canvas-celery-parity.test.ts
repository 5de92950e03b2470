import { MemoryBroker } from '@kq/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { chain, chord, group } from '../src/canvas/index';
import { ChordError } from '../src/errors/errors';
import { type ErrbackRequest, PythonException } from '../src/index';
import { Logger } from '../src/log/logger';
import { GroupResult, type AsyncResult } from '../src/results/index';
import type { Worker } from '../src/runtime/worker';

/*
 * What Celery's own integration suite (t/integration, run by `pnpm test:celery-suite`) found kq doing differently
 * from a Python worker, one test per cause, on memory:// so they run without brokers.
 */

let seq = 0;

describe('canvas as Celery records it', () => {
  let app: App;
  let worker: Worker;

  beforeEach(() => {
    seq++;
    const name = `canvas-parity-${seq}`;
    MemoryBroker.reset(name);
    app = new App('test', { broker: `memory://${name}`, backend: `memory://${name}` });
  });

  afterEach(async () => {
    await worker?.stop({ cold: true });
    await app.close();
  });

  const start = async (): Promise<void> => {
    worker = app.worker({ hostname: `parity${seq}@test`, concurrency: 4, logger: new Logger('test', { level: 'error', sink: () => undefined }) });
    await worker.start();
  };

  it("a chord's chain body starts as the child of the header task that completed the join, under the canvas's root", async () => {
    const ids = app.task('t.ids', (ctx, i: number) => [ctx.request.rootId, ctx.request.parentId, i]);
    await start();
    const root = ids.si(1);
    const rootId = root.freeze().id;
    const result = await chain(root, chord(group([2, 3, 4].map((i) => ids.si(i))), chain(ids.si(5), ids.si(6)))).delay();
    expect(await result.get({ timeout: 5000 })).toEqual([rootId, result.parent?.id, 6]);
    const bodyStart = result.parent as typeof result;
    const [bodyRoot, bodyParent, value] = (await bodyStart.get({ timeout: 5000 })) as [string, string, number];
    expect(value).toBe(5);
    expect(bodyRoot).toBe(rootId);
    const header = bodyStart.parent;
    expect(header).toBeInstanceOf(GroupResult);
    expect((header as GroupResult).results.map((member) => member.id)).toContain(bodyParent);
  });

  it("a chord whose body is a group fails each body task with the header's own error (Celery 5.6), never leaving them pending", async () => {
    const add = app.task('t.add', (_ctx, x: number, y: number) => x + y);
    const fail = app.task('t.fail', () => {
      throw new PythonException('t.integration.tasks', 'ExpectedException', ['Task expected to fail']);
    });
    await start();
    const result = await chain(group([add.si(15, 7), fail.si()]), group([add.si(9, 7), add.si(5, 7)])).delay();
    expect(result).toBeInstanceOf(GroupResult);
    const members = (result as unknown as GroupResult).results;
    for (const member of members) {
      await expect(member.get({ timeout: 5000 })).rejects.toMatchObject({ excType: 'ExpectedException' });
    }
  });

  it("a task returning an AsyncResult or a GroupResult stores its asTuple(), as Celery's prepare_value does", async () => {
    const add = app.task('t.add', (_ctx, x: number, y: number) => x + y);
    let sentChain: AsyncResult | undefined;
    let sentGroup: GroupResult | undefined;
    const sendsChain = app.task('t.sends_chain', async () => (sentChain = await chain(add.s(1, 1), add.s(2)).delay()));
    const sendsGroup = app.task('t.sends_group', async () => (sentGroup = await group([add.s(1, 1), add.s(2, 2)]).delay()));
    await start();
    const chainTuple = await (await sendsChain.delay()).get({ timeout: 5000 });
    expect(chainTuple).toEqual(sentChain?.asTuple());
    // ((last id, ((first id, None), None)), None): the parent travels along.
    expect(chainTuple).toEqual([[sentChain?.id, [[sentChain?.parent?.id, null], null]], null]);
    const groupTuple = await (await sendsGroup.delay()).get({ timeout: 5000 });
    expect(groupTuple).toEqual(sentGroup?.asTuple());
    expect((groupTuple as unknown as [unknown, unknown[]])[1]).toHaveLength(2);
  });

  it("a failed chord stores the body's FAILURE with the errback group it sent as its children", async () => {
    const add = app.task('t.add', (_ctx, x: number, y: number) => x + y);
    const tsum = app.task('t.tsum', (_ctx, values: number[]) => values.reduce((a, b) => a + b, 0));
    const boom = app.task('t.boom', () => {
      throw new RangeError('no');
    });
    const record = app.task('t.record', (_ctx, id: string) => `errback:${id}`);
    await start();
    const body = tsum.s();
    body.linkError(record.s());
    const result = await chord([add.s(1, 1), boom.s()], body).delay();
    await expect(result.get({ timeout: 5000 })).rejects.toThrow(/Dependency .* raised/);
    const meta = await result.meta();
    expect(meta?.status).toBe('FAILURE');
    // ((group id, None), [((errback id, None), None)]): one group of the body's errbacks, each sent with its id.
    const children = meta?.children as Array<[[string, null], Array<[[string, null], null]>]>;
    expect(children).toHaveLength(1);
    const errbackIds = children[0]?.[1].map(([[id]]) => id) ?? [];
    expect(errbackIds).toHaveLength(1);
    const errbackResult = await app.asyncResult(errbackIds[0] as string);
    expect(await errbackResult.get({ timeout: 5000 })).toBe(`errback:${result.id}`);
  });

  describe('new-style errbacks (errbackWithRequest)', () => {
    const setup = () => {
      const calls: Array<{ request: ErrbackRequest; error: unknown; traceback: string | null; extra: unknown[] }> = [];
      const oldStyle: string[] = [];
      const newStyle = app.task(
        't.errback_new_style',
        (_ctx, request: ErrbackRequest, error: unknown, traceback: string | null, ...extra: unknown[]) => {
          calls.push({ request, error, traceback, extra });
          return request.id;
        },
        { rawArguments: true, errbackWithRequest: true },
      );
      const oldStyleTask = app.task('t.errback_old_style', (_ctx, id: string) => {
        oldStyle.push(id);
        return id;
      });
      const fail = app.task('t.fail', (_ctx, ...args: unknown[]) => {
        throw new PythonException('t.integration.tasks', 'ExpectedException', ['Task expected to fail', ...args]);
      }, { rawArguments: true });
      const identity = app.task('t.identity', (_ctx, x: unknown) => x);
      return { calls, oldStyle, newStyle, oldStyleTask, fail, identity };
    };

    it("are called in the failed task's worker with its request, error and traceback; old-style ones are sent its id", async () => {
      const { calls, oldStyle, newStyle, oldStyleTask, fail } = setup();
      await start();
      const result = await fail.applyAsync([1], { linkError: [newStyle.s('extra'), oldStyleTask.s()] });
      await expect(result.get({ timeout: 5000 })).rejects.toThrow(/Task expected to fail/);
      await expect.poll(() => calls.length + oldStyle.length, { timeout: 5000 }).toBe(2);
      expect(calls[0]?.request).toMatchObject({ id: result.id, name: 't.fail', args: [1] });
      expect(calls[0]?.error).toBeInstanceOf(PythonException);
      expect(calls[0]?.traceback).toMatch(/ExpectedException/);
      expect(calls[0]?.extra).toEqual(['extra']);
      expect(oldStyle).toEqual([result.id]);
    });

    it("are called with the chord's body as the request when a header task fails the chord", async () => {
      const { calls, newStyle, fail, identity } = setup();
      await start();
      const body = identity.s();
      body.linkError(newStyle.s());
      const result = await chord([fail.s()], body).delay();
      await expect(result.get({ timeout: 5000 })).rejects.toThrow(/ExpectedException/);
      await expect.poll(() => calls.length, { timeout: 5000 }).toBe(1);
      expect(calls[0]?.request).toMatchObject({ id: result.id, name: 't.identity' });
      expect(calls[0]?.error).toBeInstanceOf(ChordError);
      expect(calls[0]?.traceback).toBeNull();
      // Nothing was sent, so the body's failure has no errback group as a child.
      expect((await result.meta())?.children).toEqual([]);
    });

    it('are called with the body when a header chain fails before its end (its last step fails the chord)', async () => {
      const { calls, newStyle, fail, identity } = setup();
      await start();
      const body = identity.s();
      body.linkError(newStyle.s());
      const result = await chord([chain(identity.si(42), fail.s(), identity.si(42))], body).delay();
      await expect(result.get({ timeout: 5000 })).rejects.toThrow(/ExpectedException/);
      await expect.poll(() => calls.length, { timeout: 5000 }).toBe(1);
      expect(calls[0]?.request).toMatchObject({ id: result.id, name: 't.identity' });
    });
  });

  it('ctx.addToChord adds a signature, or a whole canvas, to the chord the task runs in: the body waits for it', async () => {
    const add = app.task('t.add', (_ctx, x: number, y: number) => x + y);
    const tsum = app.task('t.tsum', (_ctx, values: number[]) => values.reduce((a, b) => a + b, 0));
    const identity = app.task('t.identity', (_ctx, x: unknown) => x);
    const addToAll = app.task('t.add_to_all_to_chord', async (ctx, nums: number[], val: number) => {
      for (const num of nums) await ctx.addToChord(add.s(num, val));
      return 0;
    });
    const addChord = app.task('t.add_chord_to_chord', async (ctx, nums: number[], val: number) => {
      await ctx.addToChord(chain(group(nums.map((num) => add.s(num, val))), tsum.s()));
      return 0;
    });
    const outside = app.task('t.outside', (ctx) => ctx.addToChord(add.s(1, 1)));
    await start();
    const added = await chord([addToAll.s([1, 2, 3], 4)], identity.s()).delay();
    expect(((await added.get({ timeout: 5000 })) as number[]).sort()).toEqual([0, 5, 6, 7]);
    const addedChord = await chord([addChord.s([1, 2, 3], 4)], identity.s()).delay();
    expect(((await addedChord.get({ timeout: 5000 })) as number[]).sort((a, b) => a - b)).toEqual([0, 18]);
    await expect((await outside.delay()).get({ timeout: 5000 })).rejects.toThrow(/not part of a chord's header/);
  });

  it("ctx.request.properties are the message's properties, as Celery's request.properties", async () => {
    const properties = app.task('t.properties', (ctx) => ({ ...ctx.request.properties }));
    await start();
    const result = await properties.applyAsync([], { priority: 3 });
    expect(await result.get({ timeout: 5000 })).toMatchObject({ priority: 3, correlationId: result.id });
  });
});
