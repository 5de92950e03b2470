import { KqError, type ResultTuple } from '@kq/core';
import type { AppContract, TaskTypes } from '../contract/app-contract';
import type { ApplyOptions, TaskCall } from '../send/apply-options';
import { Chain, Chunks, Group, MapSignature, Signature, pipe, type AnySignature, type SignatureOptions } from '../canvas/index';
import { Ignore, ImproperlyConfigured, MaxRetriesExceededError, Retry } from '../errors/errors';
import type { Logger } from '../log/logger';
import { runAsCurrentTask } from '../send/current-task';
import { AsyncResult, GroupResult, type ResultNode } from '../results/index';
import { bindArguments, parseParameters, type KwargsOf, type TaskParameter } from './task-arguments';
import type { RetryOptions, TaskRequest } from './task-request';

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

/** The task types of an app that registers `Task`s: `AppContract<TypedTasks>` is the App as the worker uses it. */
export interface TypedTasks extends TaskTypes {
  readonly registered: Task<never[], unknown>;
  readonly register: <A extends unknown[], R, const N extends readonly string[] = never>(name: string, fn: TaskFunction<A, R>, options?: TaskOptions<N>) => Task<A, R, N>;
}

/** The keyword arguments a call may pass: typed by name when the task declares its parameters, else any. */
export type TaskKwargs<N extends readonly string[], A extends unknown[]> = [N] extends [never] ? Record<string, unknown> : KwargsOf<N, A>;

/** `applyAsync` options with the task's keyword arguments typed. */
export type TaskApplyOptions<N extends readonly string[], A extends unknown[]> = Omit<ApplyOptions, 'kwargs'> & { kwargs?: TaskKwargs<N, A> };

/**
 * A registered task. Call it remotely with `delay(...args)` or `applyAsync(args, options)`; pass it around as a
 * `signature()`. The function receives a `TaskContext` first (request, AbortSignal, `retry()`), then its args.
 */
export class Task<A extends unknown[] = unknown[], R = unknown, N extends readonly string[] = never> {
  readonly app: AppContract;
  readonly name: string;
  readonly fn: TaskFunction<A, R>;
  readonly options: Readonly<TaskOptions>;
  /** The declared parameters (`options.params`), or undefined: positional arguments only. */
  readonly parameters: readonly TaskParameter[] | undefined;
  /** What Python's messages call the function: the task name's last part (`proj.add` → `add`). */
  readonly functionName: string;

  constructor(app: AppContract, name: string, fn: TaskFunction<A, R>, options: TaskOptions = {}) {
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

/**
 * Passed to every task function: the request, a cancellation signal, `retry()`, a logger. Beside `Task` because each
 * names the other: a task's function takes its context and `ctx.task` is the Task that runs.
 */
export class TaskContext {
  readonly app: AppContract;
  readonly task: Task;
  readonly request: TaskRequest;
  readonly log: Logger;
  /** Results of the tasks this run sent (Celery's trail): stored as its result's `children`. */
  readonly children: ResultTuple[] = [];
  #signal: AbortSignal | (() => AbortSignal);

  /** `signal` may be given as a function: it is then called (once) when the task first reads `ctx.signal`. */
  constructor(app: AppContract, task: Task, request: TaskRequest, signal: AbortSignal | (() => AbortSignal), log: Logger) {
    this.app = app;
    this.task = task;
    this.request = request;
    this.#signal = signal;
    this.log = log;
  }

  /** Aborted on soft time limit, hard time limit, revoke with terminate, or cold shutdown. */
  get signal(): AbortSignal {
    if (typeof this.#signal === 'function') this.#signal = this.#signal();
    return this.#signal;
  }

  /**
   * Replaces this task with a signature (Celery's `self.replace`): it runs in this task's place, with its id, and
   * whatever waited on this task (callbacks, the rest of a chain, a chord) waits on it. `return ctx.replace(sig)`.
   */
  replace(signature: AnySignature): Promise<never> {
    return replaceTask(this, signature);
  }

  /**
   * Adds a signature to the chord this task is a header part of (Celery's `add_to_chord`): it is sent as one more
   * part of the header (same group, chord and root) and the chord's body waits for its result too. Only where the
   * result backend joins chords natively (Redis, memory); the body gets the added results after the others.
   */
  async addToChord(signature: AnySignature): Promise<ResultNode> {
    const { request } = this;
    const chord = request.message.chord;
    if (!chord || request.group === null) {
      throw new ImproperlyConfigured(`${request.name}[${request.id}] is not part of a chord's header: addToChord only works in a task the chord waits for.`);
    }
    const join = (await this.app.backend())?.chordJoin;
    if (!join) throw new ImproperlyConfigured('addToChord needs a result backend that joins chords itself (redis://, memory://): this one joins them with celery.chord_unlock.');
    const added = signature.clone();
    Object.assign(added.options, { group_id: request.group, group_index: request.groupIndex, chord, root_id: request.rootId ?? request.id });
    added.freeze();
    await join.addToChord(request.group);
    return added.applyWire([], {}, {});
  }

  /**
   * Re-sends this task to run again later (same id, `retries + 1`) and rejects with `Retry` — `await ctx.retry()`
   * or `return ctx.retry()` ends the current run. Past `maxRetries` it throws `exc` (or MaxRetriesExceededError).
   */
  async retry(options: RetryOptions = {}): Promise<never> {
    const { request } = this;
    const maxRetries = options.maxRetries !== undefined ? options.maxRetries : (this.task.options.maxRetries ?? 3);
    if (maxRetries !== null && request.retries >= maxRetries) {
      if (options.exc !== undefined) throw options.exc;
      throw new MaxRetriesExceededError(
        `Can't retry ${request.name}[${request.id}]: it already ran ${request.retries + 1} times (maxRetries=${maxRetries}).`,
      );
    }
    const countdown = options.eta ? undefined : (options.countdown ?? this.task.options.defaultRetryDelay ?? 180);
    const delivery = request.deliveryInfo;
    const routing: ApplyOptions = {};
    if (options.queue !== undefined) routing.queue = options.queue;
    else if (delivery && delivery.exchange === '') routing.queue = delivery.routingKey;
    else if (delivery) {
      routing.exchange = delivery.exchange;
      routing.routingKey = delivery.routingKey;
    }
    const message = request.message;
    const apply: ApplyOptions = {
      ...routing,
      taskId: request.id,
      retries: request.retries + 1,
      kwargs: { ...(options.kwargs ?? request.kwargs) },
      rootId: request.rootId ?? request.id,
      parentId: request.id,
      headers: withoutDeliveryBookkeeping(request.headers),
      chain: message.chain ?? undefined,
      ...(options.eta ? { eta: options.eta } : { countdown }),
      ...(request.expires ? { expires: request.expires } : {}),
      ...(request.timeLimit !== null ? { timeLimit: request.timeLimit } : {}),
      ...(request.softTimeLimit !== null ? { softTimeLimit: request.softTimeLimit } : {}),
      ...(request.group !== null ? { groupId: request.group } : {}),
      ...(request.groupIndex !== null ? { groupIndex: request.groupIndex } : {}),
      ...(request.replyTo !== null ? { replyTo: request.replyTo } : {}),
    };
    const priority = options.priority ?? request.priority ?? undefined;
    if (priority !== undefined) apply.priority = priority;
    await this.app.sendTaskMessage(request.name, [...(options.args ?? request.args)], apply, {
      callbacks: message.callbacks,
      errbacks: message.errbacks,
      chord: message.chord,
    });
    const when = options.eta ?? new Date(Date.now() + (countdown ?? 0) * 1000);
    const reason = options.exc instanceof Error ? `${options.exc.name}: ${options.exc.message}` : 'retry requested';
    throw new Retry(`Retry in ${countdown ?? Math.round((when.getTime() - Date.now()) / 1000)}s: ${reason}`, options.exc, when);
  }
}

/**
 * Celery's `Task.replace`: the signature takes this task's place — its id, group, chord, callbacks, errbacks and the
 * rest of its chain — and this run ends without a result of its own (`Ignore`).
 */
async function replaceTask(context: TaskContext, signature: AnySignature): Promise<never> {
  const { request, app } = context;
  const message = request.message;
  if ('chord' in signature.options) throw new ImproperlyConfigured('A signature replacing a task must not be part of a chord');
  if (signature instanceof Chain && signature.tasks.length === 0) throw new ImproperlyConfigured('Cannot replace with an empty chain');
  let replacement: AnySignature = signature.clone();
  // A group is joined into one result (a chord with `celery.accumulate`), so callbacks get the list as Python's would.
  if (replacement instanceof Group) replacement = pipe(replacement, new Signature('celery.accumulate', [], { index: 0 }, {}, false, null, app));
  for (const callback of message.callbacks ?? []) replacement.link(callback);
  for (const errback of message.errbacks ?? []) replacement.linkError(errback);
  if (replacement instanceof Chain && Array.isArray(replacement.options['link'])) {
    const last = replacement.tasks[replacement.tasks.length - 1];
    for (const callback of replacement.options['link'] as unknown[]) last?.link(callback as AnySignature);
  }
  replacement.freeze(request.id);
  const where: Record<string, unknown> = { replaced_task_nesting: message.replacedTaskNesting + 1 };
  if (message.chord) where['chord'] = message.chord;
  if (request.group !== null) where['group_id'] = request.group;
  if (request.groupIndex !== null) where['group_index'] = request.groupIndex;
  if (request.rootId !== null) where['root_id'] = request.rootId;
  Object.assign(replacement.options, where);
  for (const step of [...(message.chain ?? [])].reverse()) replacement = pipe(replacement, Signature.fromJSON(step, app));
  await replacement.applyWire([], {}, {});
  throw new Ignore('Replaced by new task');
}

/** Custom headers a retry carries on: not the broker's or kq's delivery bookkeeping (Celery drops `x-death` too). */
function withoutDeliveryBookkeeping(headers: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { 'x-death': _death, kq_redeliveries: _redeliveries, ...rest } = headers;
  return rest;
}

function resultAsTuple(value: unknown): unknown {
  return value instanceof AsyncResult || value instanceof GroupResult ? value.asTuple() : value;
}
