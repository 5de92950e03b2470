import type { DeliveryInfo, MessageProperties, ResultTuple } from '@kq/core';
import type { ResultNode } from '../results/index';
import type { ApplyOptions } from '../send/apply-options';
import { Chain, Group, Signature, pipe, type AnySignature } from '../canvas/index';
import { Ignore, ImproperlyConfigured, MaxRetriesExceededError, Retry } from '../errors/errors';
import type { Logger } from '../log/logger';
import type { TaskMessage } from '../protocol/index';
import type { Task } from './task';
import type { TaskApp } from './task-app';

/** What a running task knows about its invocation (Celery's `task.request`). */
export interface TaskRequest {
  readonly id: string;
  readonly name: string;
  readonly args: readonly unknown[];
  readonly kwargs: Readonly<Record<string, unknown>>;
  readonly retries: number;
  readonly eta: Date | null;
  readonly expires: Date | null;
  readonly rootId: string | null;
  readonly parentId: string | null;
  readonly group: string | null;
  readonly groupIndex: number | null;
  readonly origin: string | null;
  readonly correlationId: string;
  readonly replyTo: string | null;
  readonly priority: number | null;
  readonly timeLimit: number | null;
  readonly softTimeLimit: number | null;
  /** Node name of the worker running it. */
  readonly hostname: string;
  readonly deliveryInfo: DeliveryInfo | null;
  /**
   * The message's properties (Celery's `request.properties`): `appId`, `priority`, `correlationId`, `replyTo`... as the
   * sender set them.
   */
  readonly properties: Readonly<MessageProperties>;
  /** Custom headers sent with `applyAsync({ headers })`. */
  readonly headers: Readonly<Record<string, unknown>>;
  /**
   * W3C `traceparent` of this run's span when the worker traces (`@opentelemetry/api`), so what the task sends
   * continues the trace even where the span is not active (a pool child with no OpenTelemetry SDK of its own).
   */
  readonly traceparent?: string | null;
  readonly message: TaskMessage;
}

export interface RetryOptions {
  /** Seconds until the retry runs (default: the task's `defaultRetryDelay`, 180 s). */
  countdown?: number;
  eta?: Date;
  /** The error that caused the retry: stored with the RETRY state and re-thrown when retries run out. */
  exc?: unknown;
  /** Overrides the task's `maxRetries` for this call; null = unlimited. */
  maxRetries?: number | null;
  args?: readonly unknown[];
  kwargs?: Record<string, unknown>;
  queue?: string;
  priority?: number;
}

/** Passed to every task function: the request, a cancellation signal, `retry()`, a logger. */
export class TaskContext {
  readonly app: TaskApp;
  readonly task: Task;
  readonly request: TaskRequest;
  readonly log: Logger;
  /** Results of the tasks this run sent (Celery's trail): stored as its result's `children`. */
  readonly children: ResultTuple[] = [];
  #signal: AbortSignal | (() => AbortSignal);

  /** `signal` may be given as a function: it is then called (once) when the task first reads `ctx.signal`. */
  constructor(app: TaskApp, task: Task, request: TaskRequest, signal: AbortSignal | (() => AbortSignal), log: Logger) {
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
