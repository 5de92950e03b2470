import { KqError } from '@kq/core';
import type { ApplyOptions, TaskCall } from '../send/apply-options';
import { Chunks, MapSignature, Signature, type SignatureOptions } from '../canvas/index';
import { runAsCurrentTask } from '../send/current-task';
import { AsyncResult, GroupResult } from '../results/index';
import type { TaskApp } from './task-app';
import { bindArguments, parseParameters, type KwargsOf, type TaskParameter } from './task-arguments';
import type { TaskContext } from './task-context';

export type { ApplyOptions, TaskCall };

type ErrorClass = abstract new (...args: never[]) => Error;

/** Per-task settings; unset ones fall back to the app's `task*` configuration (Celery's task attributes). */
export interface TaskOptions<N extends readonly string[] = readonly string[]> {
  /**
   * The function's parameter names after the context, in order (`'y?'` for one with a default): keyword arguments —
   * a Python caller's `send_task('proj.add', kwargs={'x': 2, 'y': 5})` — are bound to them as Python binds them, and
   * a call that does not fit fails with Python's `TypeError`. Without it the task takes positional arguments only.
   */
  params?: N;
  /**
   * The function gets the positional arguments as sent and reads keyword arguments from `ctx.request.kwargs` (for
   * variadic tasks, as Python's `*args, **kwargs`). `params` is then ignored.
   */
  rawArguments?: boolean;
  /**
   * A new-style errback (Celery's errback whose function takes `(request, exc, traceback)`): linked as an errback
   * (`linkError`) and the linked task failing on a kq worker, the worker calls it right there, in the failed run, as
   * `fn(ctx, request: ErrbackRequest, exc, traceback)` (then the signature's own arguments) instead of sending it the
   * failed task's id; for a failed chord, `request` is the chord's body. Its return value is not stored. Python
   * workers call errbacks new-style by the function's arity; kq by this flag.
   */
  errbackWithRequest?: boolean;
  queue?: string;
  exchange?: string;
  routingKey?: string;
  priority?: number;
  /** Retries before giving up (default 3); null = retry forever. */
  maxRetries?: number | null;
  /** Seconds before a retry when no countdown is given (default 180). */
  defaultRetryDelay?: number;
  /** Retry automatically on these errors (classes or a predicate). */
  autoretryFor?: readonly ErrorClass[] | ((error: unknown) => boolean);
  /** Exponential backoff for automatic retries: true = factor 1 s, or the factor in seconds. */
  retryBackoff?: boolean | number;
  /** Backoff cap in seconds (default 600). */
  retryBackoffMax?: number;
  /** Full jitter on the backoff (default true). */
  retryJitter?: boolean;
  acksLate?: boolean;
  acksOnFailureOrTimeout?: boolean;
  rejectOnWorkerLost?: boolean;
  /** Hard time limit, seconds: the task is failed and its slot freed. */
  timeLimit?: number;
  /** Soft time limit, seconds: the task's `signal` is aborted with SoftTimeLimitExceeded. */
  softTimeLimit?: number;
  /** "10/s", "100/m", "1000/h" or tasks per second. */
  rateLimit?: string | number;
  ignoreResult?: boolean;
  trackStarted?: boolean;
  /** Default expiry of sent messages, seconds. */
  expires?: number;
  serializer?: string;
}

export type TaskFunction<A extends unknown[], R> = (ctx: TaskContext, ...args: A) => R | Promise<R>;

/** The keyword arguments a call may pass: typed by name when the task declares its parameters, else any. */
export type TaskKwargs<N extends readonly string[], A extends unknown[]> = [N] extends [never] ? Record<string, unknown> : KwargsOf<N, A>;

/** `applyAsync` options with the task's keyword arguments typed. */
export type TaskApplyOptions<N extends readonly string[], A extends unknown[]> = Omit<ApplyOptions, 'kwargs'> & { kwargs?: TaskKwargs<N, A> };

/**
 * A registered task. Call it remotely with `delay(...args)` or `applyAsync(args, options)`; pass it around as a
 * `signature()`. The function receives a `TaskContext` first (request, AbortSignal, `retry()`), then its args.
 */
export class Task<A extends unknown[] = unknown[], R = unknown, N extends readonly string[] = never> {
  readonly app: TaskApp;
  readonly name: string;
  readonly fn: TaskFunction<A, R>;
  readonly options: Readonly<TaskOptions>;
  /** The declared parameters (`options.params`), or undefined: positional arguments only. */
  readonly parameters: readonly TaskParameter[] | undefined;
  /** What Python's messages call the function: the task name's last part (`proj.add` → `add`). */
  readonly functionName: string;

  constructor(app: TaskApp, name: string, fn: TaskFunction<A, R>, options: TaskOptions = {}) {
    this.app = app;
    this.name = name;
    this.fn = fn;
    this.options = options;
    this.parameters = options.params ? parseParameters(name, options.params) : undefined;
    this.functionName = name.slice(name.lastIndexOf('.') + 1) || name;
  }

  /**
   * Calls the function for a received request, with its keyword arguments bound to the declared parameters. A
   * returned result (a task returning the AsyncResult of what it sent) is given as its `asTuple()`, as Celery stores
   * one (`prepare_value`): the id, the parents and a group's members, which a Python caller rebuilds.
   */
  invoke(context: TaskContext): unknown {
    const { args, kwargs } = context.request;
    const bound = (this.options.rawArguments ? args : bindArguments(this.functionName, this.parameters, args, kwargs)) as A;
    const value = runAsCurrentTask(context, () => this.fn(context, ...bound));
    return value instanceof Promise ? value.then(resultAsTuple) : resultAsTuple(value);
  }

  /** Sends the task with these positional arguments. */
  delay(...args: A): Promise<AsyncResult<Awaited<R>>> {
    return this.applyAsync(args);
  }

  /**
   * Sends the task with arguments and options (countdown, eta, expires, priority, queue, ...). With declared
   * `params`, arguments may go by name: `add.applyAsync([], { kwargs: { x: 2, y: 5 } })`.
   */
  applyAsync(args?: A | Partial<A>, options: TaskApplyOptions<N, A> = {}): Promise<AsyncResult<Awaited<R>>> {
    const withDefaults = this.withDefaults(options as ApplyOptions);
    return this.app.sendTask<Awaited<R>>(this.name, (args ?? []) as unknown[], withDefaults.kwargs ?? {}, withDefaults);
  }

  /**
   * Sends one call of the task per argument list, in bulk (`app.sendTasks`): the way to enqueue thousands at once.
   * `options` apply to every call.
   */
  applyMany(argsList: readonly A[], options: ApplyOptions = {}): Promise<Array<AsyncResult<Awaited<R>>>> {
    if (options.taskId !== undefined && argsList.length > 1) {
      return Promise.reject(new KqError(`applyMany sends ${argsList.length} tasks, which cannot share one taskId; leave taskId out.`));
    }
    const withDefaults = this.withDefaults(options);
    return this.app.sendTasks<Awaited<R>>(
      argsList.map((args) => ({ name: this.name, args, kwargs: withDefaults.kwargs ?? {}, options: withDefaults })),
    );
  }

  /** Options for one call: the call's own, else the task's. */
  withDefaults(options: ApplyOptions): ApplyOptions {
    const withDefaults: ApplyOptions = { ...options };
    if (withDefaults.queue === undefined && withDefaults.exchange === undefined && this.options.queue !== undefined) withDefaults.queue = this.options.queue;
    if (withDefaults.exchange === undefined && this.options.exchange !== undefined) withDefaults.exchange = this.options.exchange;
    if (withDefaults.routingKey === undefined && this.options.routingKey !== undefined) withDefaults.routingKey = this.options.routingKey;
    if (withDefaults.priority === undefined && this.options.priority !== undefined) withDefaults.priority = this.options.priority;
    if (withDefaults.expires === undefined && this.options.expires !== undefined) withDefaults.expires = this.options.expires;
    if (withDefaults.timeLimit === undefined && this.options.timeLimit !== undefined) withDefaults.timeLimit = this.options.timeLimit;
    if (withDefaults.softTimeLimit === undefined && this.options.softTimeLimit !== undefined) withDefaults.softTimeLimit = this.options.softTimeLimit;
    if (withDefaults.serializer === undefined && this.options.serializer !== undefined) withDefaults.serializer = this.options.serializer;
    if (withDefaults.ignoreResult === undefined && this.options.ignoreResult !== undefined) withDefaults.ignoreResult = this.options.ignoreResult;
    return withDefaults;
  }

  /** A signature of this task (Celery's `signature()`), with keyword arguments and options. */
  signature(args: Partial<A> | readonly unknown[] = [], kwargs: TaskKwargs<N, A> | Record<string, unknown> = {}, options: SignatureOptions = {}): Signature<Awaited<R>> {
    return new Signature<Awaited<R>>(this.name, args as unknown[], kwargs as Record<string, unknown>, options, false, null, this.app);
  }

  /**
   * A partial signature (Celery's `.s()`): in a chain or as a callback, the previous result is prepended to these
   * arguments — `add.s(4)` after a step returning 2 calls `add(2, 4)`.
   */
  s(...args: Partial<A> | unknown[]): Signature<Awaited<R>, AsyncResult<Awaited<R>>, A[0]> {
    return new Signature<Awaited<R>, AsyncResult<Awaited<R>>, A[0]>(this.name, args, {}, {}, false, null, this.app);
  }

  /** An immutable signature: it ignores the previous step's result (Celery's `.si()`). Takes every argument. */
  si(...args: A): Signature<Awaited<R>> {
    return new Signature<Awaited<R>>(this.name, args, {}, {}, true, null, this.app);
  }

  /** One message running the task over every item in the worker (Celery's `task.map`). */
  map(items: ReadonlyArray<A[0]>): MapSignature<Awaited<R>> {
    return new MapSignature<Awaited<R>>('xmap', this.s(), items, {}, this.app);
  }

  /** One message running the task with each item's arguments (Celery's `task.starmap`). */
  starmap(items: readonly A[]): MapSignature<Awaited<R>> {
    return new MapSignature<Awaited<R>>('xstarmap', this.s(), items, {}, this.app);
  }

  /** The calls split into messages of `size` calls each, sent as a group (Celery's `task.chunks`). */
  chunks(items: readonly A[], size: number): Chunks<Awaited<R>> {
    return new Chunks<Awaited<R>>(this.s(), items, size, {}, this.app);
  }
}

function resultAsTuple(value: unknown): unknown {
  return value instanceof AsyncResult || value instanceof GroupResult ? value.asTuple() : value;
}
