import { randomUUID } from 'node:crypto';
import { backoffCountdown, KqError, processWide, Queue, TypedEmitter, UnsupportedFeature, type CycleRegister, type CycleState } from '@kq/core';
import type { AppContract } from '../../contract/app-contract';
import { deterministicTaskId } from '../deterministic-id';
import { prepareTaskMessage } from '../../task/prepare-task-message';
import { Ignore, Retry } from '../../errors/errors';
import type { Logger } from '../../log/logger';
import type { Task, TaskContext, TaskFunction, TaskOptions, TypedTasks } from '../../task/task';
import { ControlLog, type PeriodicRecord } from './control-log';
import { StopPeriodic } from './errors';
import { PERIODIC_HEADER, periodicHeader, readPeriodicMeta, type PeriodicMeta } from './periodic-meta';

/** Task options a periodic task takes as they are; retries and acks are the cycle's business. */
type PassedTaskOptions = Omit<TaskOptions, 'acksLate' | 'maxRetries' | 'autoretryFor' | 'retryBackoff' | 'retryBackoffMax' | 'retryJitter' | 'defaultRetryDelay'>;

export interface PeriodicOptions<A extends unknown[] = unknown[]> extends PassedTaskOptions {
  /** Seconds between runs. */
  every: number;
  /**
   * true (default): the next run is due `every` seconds after the current one *finishes* (fixed delay). false: runs
   * are due on a fixed rate, `every` seconds after the previous run's slot; a run that overran its slot is followed
   * by the next slot still ahead. Either way the next run is scheduled only when the current one is over, so runs
   * never overlap.
   */
  phased?: boolean;
  /** Attempts of one run, the first included, before it is parked in the dead-letter queue. Default 3. */
  maxAttempts?: number;
  /** Seconds before a failed attempt is retried. Default: `every`, at most 60. */
  retryDelay?: number;
  /** Double the retry delay at every attempt, up to `retryDelayMax`. Default false. */
  retryBackoff?: boolean;
  /** Cap of the retry delay with `retryBackoff`, seconds. Default 600. */
  retryDelayMax?: number;
  /** Positional arguments of every run. */
  args?: A;
  kwargs?: Record<string, unknown>;
  /** Seconds from the creation of a cycle to its first run. Default 0. */
  initialDelay?: number;
  /**
   * Seconds without any sign of the cycle (no run started, retried or scheduled) after which a worker starts a new
   * cycle — what recovers a cycle whose message the broker lost. Default: 3 × (every + the longest retry delay), at
   * least 60. It must be longer than the longest time a message may wait in its queue before a worker takes it.
   */
  staleAfter?: number;
  /**
   * Seconds a run's claim on its step lasts without a heartbeat (a running run renews it every third of this). A
   * copy of the same step that arrives meanwhile is deferred; a run whose worker died is taken over after this.
   * Default 30.
   */
  claimTimeout?: number;
  /** End the cycle (instead of going on with the next run) when a run fails past `maxAttempts`. Default false. */
  stopOnFailure?: boolean;
  /** Started by workers (`periodicStep`). False keeps the task registered but starts no cycle. Default true. */
  enabled?: boolean;
  /** Queue of lifecycle records. Default `<name>.periodic.control`. */
  controlQueue?: string;
  /** Most records kept in the control queue (oldest dropped). Default 1000. */
  controlMaxLength?: number;
  /** Queue where runs that failed past `maxAttempts` are parked. Default `<name>.periodic.dead`. */
  deadLetterQueue?: string;
  /** A broker-side register to use instead of the transport's own (custom transports, tests). */
  register?: CycleRegister;
}

export type PeriodicTaskEvents = {
  /** A run failed past its attempts and was parked in the dead-letter queue (in the worker that ran it). */
  dead: [meta: PeriodicMeta, error: unknown];
  /** This process created a new cycle. */
  created: [cycle: string];
  /** The cycle was ended (by `StopPeriodic`, `stopOnFailure`, or `stop()`). */
  stopped: [cycle: string, reason: string];
};

/** Options that are the cycle's, not the task's. */
const PERIODIC_OPTION_KEYS: ReadonlySet<string> = new Set([
  'every', 'phased', 'maxAttempts', 'retryDelay', 'retryBackoff', 'retryDelayMax', 'args', 'kwargs', 'initialDelay', 'staleAfter',
  'claimTimeout', 'stopOnFailure', 'enabled', 'controlQueue', 'controlMaxLength', 'deadLetterQueue', 'register',
] satisfies ReadonlyArray<keyof PeriodicOptions>);

/** The cycle id a stopped periodic task's register holds, so no worker starts a new cycle. */
const STOPPED = 'stopped';
/** How long a stop tombstone lasts, ms (a year: in practice until `start({ restart: true })`). */
const TOMBSTONE_TTL_MS = 365 * 24 * 3600 * 1000;

// Process-wide: a worker's periodicStep (the kq CLI's copy of @kq/worker, say) must see the tasks an app module
// defined with another copy.
const registry = processWide('kq.periodic-tasks.v1', () => new WeakMap<AppContract<TypedTasks>, Map<string, PeriodicTask<never[], unknown>>>());

/** The periodic tasks defined on `app` (what `periodicStep` starts). */
export function periodicTasks(app: AppContract<TypedTasks>): PeriodicTask<never[], unknown>[] {
  return [...(registry.get(app)?.values() ?? [])];
}

/**
 * Defines a self-rescheduling periodic task (the hatchery pattern): a task whose run, once finished, schedules the
 * next run through the broker's delayed delivery. There is no scheduler process — any worker that has the task runs
 * the current run, so workers can be deployed, scaled or killed freely — and one run at a time: the cycle is a single
 * message, guarded by a broker-side register (see `CycleRegister`).
 *
 * A failed run is retried (`maxAttempts`, `retryDelay`); past the limit it is parked in `<name>.periodic.dead`,
 * recorded and logged, and the cycle goes on with the next run (unless `stopOnFailure`, or the task throws
 * `StopPeriodic`). Every run's lifecycle is recorded in `<name>.periodic.control`. Workers start the cycle with
 * `periodicStep()`; starting several workers starts one cycle.
 *
 *   const cleanup = definePeriodic(app, 'proj.cleanup', async (ctx) => { ... }, { every: 300 });
 *   app.worker({ steps: [periodicStep()] });
 */
export function definePeriodic<A extends unknown[], R>(app: AppContract<TypedTasks>, name: string, fn: TaskFunction<A, R>, options: PeriodicOptions<A>): PeriodicTask<A, R> {
  const periodic = new PeriodicTask(app, name, fn, options);
  let byName = registry.get(app);
  if (!byName) registry.set(app, (byName = new Map()));
  byName.set(name, periodic as unknown as PeriodicTask<never[], unknown>);
  return periodic;
}

/** A periodic task: the registered task plus its cycle (see `definePeriodic`). */
export class PeriodicTask<A extends unknown[], R> extends TypedEmitter<PeriodicTaskEvents> {
  readonly app: AppContract<TypedTasks>;
  readonly name: string;
  /** The registered task (its runs are ordinary Celery task messages; `task.delay()` runs it once, outside the cycle). */
  readonly task: Task<A, R | undefined>;
  readonly everyMs: number;
  readonly phased: boolean;
  readonly maxAttempts: number;
  readonly staleAfterMs: number;
  readonly claimMs: number;
  readonly enabled: boolean;
  readonly control: ControlLog;
  readonly deadLetterQueue: Queue;
  readonly #fn: TaskFunction<A, R>;
  readonly #options: PeriodicOptions<A>;
  readonly #log: Logger;
  #register: Promise<CycleRegister> | undefined;

  constructor(app: AppContract<TypedTasks>, name: string, fn: TaskFunction<A, R>, options: PeriodicOptions<A>) {
    super();
    const seconds = (value: number | undefined, field: string, fallback: number, allowZero = false): number => {
      const v = value ?? fallback;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (!allowZero && v === 0)) {
        throw new KqError(`Periodic task ${JSON.stringify(name)}: \`${field}\` must be a ${allowZero ? 'non-negative' : 'positive'} number of seconds; got ${JSON.stringify(value)}.`);
      }
      return v * 1000;
    };
    this.app = app;
    this.name = name;
    this.#fn = fn;
    this.#options = options;
    this.everyMs = seconds(options.every, 'every', NaN);
    this.phased = options.phased ?? true;
    const maxAttempts = options.maxAttempts ?? 3;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new KqError(`Periodic task ${JSON.stringify(name)}: \`maxAttempts\` must be a whole number ≥ 1.`);
    this.maxAttempts = maxAttempts;
    seconds(options.retryDelay, 'retryDelay', 1);
    seconds(options.initialDelay, 'initialDelay', 0, true);
    const longestRetry = options.retryBackoff ? seconds(options.retryDelayMax, 'retryDelayMax', 600) : this.#retryDelayMs(1);
    this.staleAfterMs = seconds(options.staleAfter, 'staleAfter', Math.max(60, (3 * (this.everyMs + longestRetry)) / 1000));
    this.claimMs = seconds(options.claimTimeout, 'claimTimeout', 30);
    this.enabled = options.enabled ?? true;
    this.#log = app.log.child(`periodic.${name}`);
    this.control = new ControlLog(app, name, options.controlQueue ?? `${name}.periodic.control`, options.controlMaxLength ?? 1000, this.#log);
    this.deadLetterQueue = new Queue(options.deadLetterQueue ?? `${name}.periodic.dead`, { durable: true });
    const taskOptions = Object.fromEntries(Object.entries(options).filter(([key]) => !PERIODIC_OPTION_KEYS.has(key))) as PassedTaskOptions;
    // acksLate: a run whose worker dies is delivered again instead of being lost, and the cycle with it.
    this.task = app.task<A, R | undefined, readonly string[]>(name, (ctx, ...args) => this.#run(ctx, args), { ...taskOptions, acksLate: true, maxRetries: 0 });
  }

  /** The broker-side register of this task's cycle. */
  register(): Promise<CycleRegister> {
    this.#register ??= this.#openRegister().catch((error: unknown) => {
      this.#register = undefined;
      throw error;
    });
    return this.#register;
  }

  /** The cycle as the broker has it: null when there is none; `cycle: 'stopped'` when it was ended. */
  async status(): Promise<CycleState | null> {
    return (await this.register()).read(this.name);
  }

  /**
   * Starts a cycle unless one exists (safe to call from every worker at once: one cycle is created). A stopped
   * cycle stays stopped unless `restart`. Resolves to true when this call created the cycle.
   */
  async start(options: { restart?: boolean } = {}): Promise<boolean> {
    const register = await this.register();
    const existing = await register.read(this.name);
    if (existing) {
      if (!(options.restart && existing.cycle === STOPPED)) return false;
      await register.remove(this.name, STOPPED);
    }
    const cycle = randomUUID();
    if (!(await register.create(this.name, { cycle, step: 0 }, this.staleAfterMs))) return false;
    const due = Date.now() + (this.#options.initialDelay ?? 0) * 1000;
    const meta: PeriodicMeta = { cycle, step: 0, run: 1, attempt: 1, due, slot: due };
    this.#log.info(`Started cycle ${cycle} (${this.#describe()})`);
    this.emit('created', cycle);
    await this.control.record('created', meta);
    await this.#send(meta);
    return true;
  }

  /** Ends the cycle: the message in flight is dropped when it comes up, and workers start no new cycle. */
  async stop(reason = 'stopped'): Promise<void> {
    const register = await this.register();
    const current = await register.read(this.name);
    if (current?.cycle === STOPPED) return;
    await this.#tombstone(current?.cycle ?? null, reason, current ? { cycle: current.cycle, step: current.step, run: 0, attempt: 0, due: Date.now(), slot: Date.now() } : null);
  }

  #describe(): string {
    return `every ${this.everyMs / 1000}s, ${this.phased ? 'phased' : 'fixed rate'}, ${this.maxAttempts} attempt(s) per run`;
  }

  async #openRegister(): Promise<CycleRegister> {
    if (this.#options.register) return this.#options.register;
    const transport = await this.app.connection.transport();
    if (!transport.cycleRegister) {
      throw new UnsupportedFeature(
        `Periodic task ${this.name} needs a broker-side register, which the ${transport.name} transport does not provide. ` +
          `Use redis://, amqp:// or memory://, or pass one explicitly (the \`register\` option).`,
      );
    }
    return transport.cycleRegister();
  }

  /** The task body around the user's function: claim the step, run, schedule what comes next. */
  async #run(ctx: TaskContext, args: A): Promise<R | undefined> {
    const meta = readPeriodicMeta(ctx.request.headers);
    if (!meta) return this.#fn(ctx, ...args); // called directly (task.delay()): one run, outside the cycle
    const register = await this.register();
    const token = randomUUID();
    let claim = await register.begin(this.name, meta, token, this.claimMs, this.staleAfterMs);
    if (claim === 'absent' && meta.cycle !== STOPPED) {
      // The register expired while this message waited (workers were down longer than staleAfter): it carries on.
      await register.create(this.name, { cycle: meta.cycle, step: meta.step }, this.staleAfterMs);
      claim = await register.begin(this.name, meta, token, this.claimMs, this.staleAfterMs);
    }
    if (claim === 'busy') {
      // Another copy of this step is running (or its worker died and its claim has not run out): look again later.
      await this.#send(meta, Date.now() + this.claimMs);
      await this.control.record('deferred', meta, { taskId: ctx.request.id, reason: 'another copy of this step holds the claim' });
      throw new Ignore(`${this.name} step ${meta.step} is claimed by another run`);
    }
    if (claim !== 'current') {
      const reason = claim === 'stale' ? 'the cycle is past this step (a duplicate)' : claim === 'superseded' ? 'another cycle is the live one' : 'no cycle';
      this.#log.info(`Dropping ${this.name}[${ctx.request.id}] (run ${meta.run}, step ${meta.step}): ${reason}`);
      await this.control.record('dropped', meta, { taskId: ctx.request.id, reason });
      throw new Ignore(reason);
    }

    await this.control.record('started', meta, { taskId: ctx.request.id });
    const heartbeat = setInterval(() => {
      register.begin(this.name, meta, token, this.claimMs, this.staleAfterMs).then(
        (state) => state !== 'current' && this.#log.warning(`${this.name} run ${meta.run} lost its claim (${state}) while running`),
        (error: unknown) => this.#log.warning(`${this.name} run ${meta.run}: could not renew its claim: ${String(error)}`),
      );
    }, Math.max(100, this.claimMs / 3));
    heartbeat.unref();
    const started = performance.now();
    let value: R;
    try {
      value = await this.#fn(ctx, ...args);
    } catch (error) {
      clearInterval(heartbeat);
      return this.#afterFailure(ctx, meta, error, (performance.now() - started) / 1000);
    }
    clearInterval(heartbeat);
    const runtime = (performance.now() - started) / 1000;
    await this.control.record('done', meta, { taskId: ctx.request.id, runtime });
    await this.#next(meta, this.#nextRun(meta), 'run');
    return value;
  }

  async #afterFailure(ctx: TaskContext, meta: PeriodicMeta, error: unknown, runtime: number): Promise<R | undefined> {
    if (error instanceof StopPeriodic) {
      await this.control.record('done', meta, { taskId: ctx.request.id, runtime, reason: error.reason });
      await this.#tombstone(meta.cycle, error.reason, meta);
      return error.result as R | undefined;
    }
    if (error instanceof Retry || error instanceof Ignore) throw error; // the task handled its message itself
    const failure = describeError(error);
    const retry = meta.attempt < this.maxAttempts;
    await this.control.record('failed', meta, { taskId: ctx.request.id, runtime, retry, error: failure });
    if (retry) {
      const due = Date.now() + this.#retryDelayMs(meta.attempt);
      await this.#next(meta, { cycle: meta.cycle, step: meta.step + 1, run: meta.run, attempt: meta.attempt + 1, due, slot: meta.slot }, 'retry');
      throw error;
    }
    await this.#park(ctx, meta, error);
    if (this.#options.stopOnFailure) await this.#tombstone(meta.cycle, `run ${meta.run} failed ${meta.attempt} time(s) (stopOnFailure)`, meta);
    else await this.#next(meta, this.#nextRun(meta), 'run');
    throw error;
  }

  /** Parks a run that failed past its attempts in the dead-letter queue, and reports it. */
  async #park(ctx: TaskContext, meta: PeriodicMeta, error: unknown): Promise<void> {
    const failure = describeError(error);
    this.#log.error(`${this.name} run ${meta.run} failed ${meta.attempt} time(s); parked in ${this.deadLetterQueue.name}: ${failure.type}: ${failure.message}`);
    this.emit('dead', meta, error);
    try {
      const { request } = ctx;
      const prepared = prepareTaskMessage(this.app, this.name, request.args, {
        taskId: request.id,
        kwargs: { ...request.kwargs },
        headers: { [PERIODIC_HEADER]: periodicHeader(meta), kq_periodic_failure: { ...failure, attempts: meta.attempt, at: new Date().toISOString() } },
      });
      await this.app.producer.publishMessage(prepared.message, { exchange: '', routingKey: this.deadLetterQueue.name, declare: [this.deadLetterQueue] });
    } catch (parkError) {
      this.#log.error(`Could not park ${this.name} run ${meta.run} in ${this.deadLetterQueue.name}: ${String(parkError)}`);
    }
    await this.control.record('dead', meta, { taskId: ctx.request.id, error: failure });
  }

  /** The first attempt of the run after `meta`'s. */
  #nextRun(meta: PeriodicMeta): PeriodicMeta {
    const now = Date.now();
    let slot: number;
    if (this.phased) slot = now + this.everyMs;
    else {
      slot = meta.slot + this.everyMs;
      if (slot <= now) slot = meta.slot + Math.ceil((now - meta.slot) / this.everyMs) * this.everyMs;
    }
    return { cycle: meta.cycle, step: meta.step + 1, run: meta.run + 1, attempt: 1, due: slot, slot };
  }

  /** Moves the register to `next.step`, then publishes it — in that order, so a crash can lose a step but never double it. */
  async #next(current: PeriodicMeta, next: PeriodicMeta, kind: 'run' | 'retry'): Promise<void> {
    const register = await this.register();
    const moved = await register.advance(this.name, current, next.step, this.staleAfterMs);
    if (moved !== 'advanced') {
      const reason = `not scheduling the next ${kind}: the cycle moved on (${moved})`;
      this.#log.info(`${this.name} run ${current.run}: ${reason}`);
      await this.control.record('dropped', current, { reason });
      return;
    }
    try {
      await this.#send(next);
    } catch (error) {
      // The register says next.step but no message carries it: workers start a new cycle after staleAfter.
      this.#log.error(`${this.name}: could not schedule run ${next.run} (attempt ${next.attempt}): ${String(error)}; the cycle restarts after ${this.staleAfterMs / 1000}s`);
      throw error;
    }
  }

  /** Publishes `meta`'s message, held by the broker until `due` (at `dueOverride` when given). */
  async #send(meta: PeriodicMeta, dueOverride?: number): Promise<void> {
    const due = dueOverride ?? meta.due;
    const delay = Math.max(0, due - Date.now());
    const transport = await this.app.connection.transport();
    const brokerDelay = delay > 0 && transport.capabilities.delayedDelivery;
    const prepared = prepareTaskMessage(this.app, this.name, this.#options.args ?? [], {
      taskId: deterministicTaskId('periodic', this.name, meta.cycle, meta.step),
      kwargs: { ...(this.#options.kwargs ?? {}) },
      headers: { [PERIODIC_HEADER]: periodicHeader(meta) },
      ...(this.#options.queue === undefined ? {} : { queue: this.#options.queue }),
      // Without broker delay the worker holds it until its ETA (Celery's way); with it, no ETA, so it runs on arrival.
      ...(delay > 0 && !brokerDelay ? { eta: new Date(due) } : {}),
    });
    await this.app.producer.publishMessage(prepared.message, {
      exchange: prepared.exchange,
      routingKey: prepared.routingKey,
      declare: prepared.queue ? [prepared.queue] : [],
      ...(brokerDelay ? { delay } : {}),
      retry: this.app.conf.taskPublishRetry,
      retryPolicy: this.app.conf.taskPublishRetryPolicy,
    });
    if (dueOverride === undefined) await this.control.record('sent', meta, { taskId: prepared.id });
  }

  /** Ends the cycle: the register holds a tombstone, so its messages are dropped and no worker starts another. */
  async #tombstone(cycle: string | null, reason: string, meta: PeriodicMeta | null): Promise<void> {
    const register = await this.register();
    if (cycle !== null) await register.remove(this.name, cycle);
    await register.create(this.name, { cycle: STOPPED, step: 0 }, TOMBSTONE_TTL_MS);
    this.#log.warning(`Stopped the cycle of ${this.name}: ${reason}`);
    if (cycle !== null) this.emit('stopped', cycle, reason);
    if (meta) await this.control.record('stopped', meta, { reason });
  }

  #retryDelayMs(attempt: number): number {
    const base = (this.#options.retryDelay ?? Math.min(this.everyMs / 1000, 60)) * 1000;
    if (!this.#options.retryBackoff) return base;
    return backoffCountdown(attempt - 1, { factor: base, maximum: (this.#options.retryDelayMax ?? 600) * 1000, jitter: false });
  }
}

function describeError(error: unknown): NonNullable<PeriodicRecord['error']> {
  if (error instanceof Error) return { type: error.name, message: error.message };
  return { type: typeof error, message: String(error) };
}

