import { KqError, type ResultTuple } from '@kq/core';
import { ChordError, NotRegistered, TaskFailedError } from '../errors/errors';
import type { SignatureJson } from '../protocol/index';
import { GroupResult, resultFromTuple } from '../results/index';
import type { CanvasAppView } from '../contract/app-contract';
import { failChord, errorRepr, sendChordBody } from './chord-completion';
import { Chunks } from './map';
import { Signature } from './signature';

/** What a built-in task's function uses of its context (a structural part of `TaskContext`). */
export interface BuiltinContext {
  readonly request: { readonly id: string; readonly args: readonly unknown[]; readonly kwargs: Readonly<Record<string, unknown>> };
  /** The worker's task logger. */
  readonly log: { error(message: string): void };
  retry(options: { countdown?: number; exc?: unknown; maxRetries?: number | null }): Promise<never>;
}

/** A task the app registers for itself, as Celery's app does (`celery.chord_unlock`, `celery.map`...). */
export interface BuiltinTask {
  readonly name: string;
  readonly fn: (ctx: BuiltinContext, ...args: never[]) => unknown;
  readonly options: { params?: readonly string[]; maxRetries?: number | null; ignoreResult?: boolean; rawArguments?: boolean };
}

/** The app as the built-ins see it: a canvas app that can look up its tasks' functions. */
export interface BuiltinHost extends CanvasAppView {
  localTask(name: string): ((ctx: BuiltinContext, ...args: unknown[]) => unknown) | undefined;
}

/**
 * Celery's built-in tasks, so a kq worker runs what Python canvases send: the chord join for backends without a
 * native one, map/starmap/chunks, and `celery.accumulate` (a group replacing a task).
 */
export function builtinTasks(app: BuiltinHost): BuiltinTask[] {
  const localTask = (json: SignatureJson): ((ctx: BuiltinContext, ...args: unknown[]) => unknown) => {
    const fn = app.localTask(json.task);
    if (!fn) throw new NotRegistered(json.task);
    return fn;
  };
  return [
    {
      name: 'celery.chord_unlock',
      options: { params: ['group_id', 'callback', 'interval?', 'max_retries?', 'result?'], maxRetries: null, ignoreResult: true },
      fn: async (ctx: BuiltinContext, groupId: string, callbackJson: SignatureJson, interval?: number | null, maxRetries?: number | null, result?: ResultTuple[] | null) => {
        const backend = await app.backend();
        if (!backend) throw new KqError('celery.chord_unlock needs a result backend to read the chord header; configure the same one as the sender.');
        const wait = interval ?? app.conf.resultChordRetryInterval;
        const header = new GroupResult(groupId, (result ?? []).map((tuple) => resultFromTuple(tuple, backend)), backend);
        let ready: boolean;
        try {
          ready = await header.ready();
        } catch (error) {
          return ctx.retry({ exc: error, countdown: wait, maxRetries: maxRetries ?? null });
        }
        if (!ready) return ctx.retry({ countdown: wait, maxRetries: maxRetries ?? null });
        const callback = Signature.fromJSON(callbackJson, app);
        const log = (message: string): void => ctx.log.error(message);
        let values: unknown[];
        try {
          values = await header.join();
        } catch (error) {
          const culprit = error instanceof TaskFailedError ? `Dependency ${error.taskId} raised ${errorRepr(error)}` : errorRepr(error);
          log(`Chord ${groupId} raised: ${culprit}`);
          await failChord(app, backend, callback, new ChordError(culprit), log);
          return null;
        }
        await sendChordBody(app, backend, callback, values, log);
        return null;
      },
    },
    {
      name: 'celery.map',
      options: { params: ['task', 'it'] },
      fn: async (ctx: BuiltinContext, task: SignatureJson, it: unknown[]) => {
        const fn = localTask(task);
        const out: unknown[] = [];
        for (const item of it) out.push(await fn(ctx, item));
        return out;
      },
    },
    {
      name: 'celery.starmap',
      options: { params: ['task', 'it'] },
      fn: async (ctx: BuiltinContext, task: SignatureJson, it: unknown[][]) => {
        const fn = localTask(task);
        const out: unknown[] = [];
        for (const item of it) out.push(await fn(ctx, ...(Array.isArray(item) ? item : [item])));
        return out;
      },
    },
    {
      name: 'celery.chunks',
      options: { params: ['task', 'it', 'n'] },
      fn: async (_ctx: BuiltinContext, task: SignatureJson, it: unknown[][], n: number) => {
        const result = await new Chunks(task, it, n, {}, app).applyWire([], {}, {});
        return result.asTuple();
      },
    },
    {
      name: 'celery.accumulate',
      options: { rawArguments: true },
      fn: (ctx: BuiltinContext) => {
        const index = ctx.request.kwargs['index'];
        return typeof index === 'number' ? ctx.request.args[index] : [...ctx.request.args];
      },
    },
  ];
}
