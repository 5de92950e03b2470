import { backoffCountdown, KqError, StaleDeliveryError, type Delivery, type ResultBackend, type ResultTuple, type TaskState } from '@kq/core';
import { Ignore, Reject, Retry, SoftTimeLimitExceeded, TaskRevokedError, TimeLimitExceeded, WorkerLostError, WorkerShutdownError } from '../errors/errors';
import { type TaskMessage } from '../protocol/index';
import { readTaskBody, taskBodyPending } from '../protocol/decode-task-message';
import { exceptionInfo, formatDateDone } from '../results/index';
import { TaskContext, type Task } from '../task/task';
import type { TaskRequest } from '../task/task-request';
import { chordPartReturn, failRemainingChain, sendCallbacks, sendErrbacks } from './canvas-links';
import { startRunTrace, type RunTrace } from '../telemetry/task-tracing';
import { setLongTimeout, type LongTimeout } from './long-timeout';
import type { HeldTask, RequestInfo } from './held-task';
import { taskResultMeta } from './task-result-meta';
import { resultPreview } from './result-preview';
import type { WorkerHost } from './worker-host';
import { describeError } from '../errors/describe-error';

type Outcome = 'succeeded' | 'failed' | 'retried' | 'rejected' | 'revoked' | 'ignored';

/** What a job that had nothing left to wait for returns (shared: one resolved promise, not one per task). */
const DONE: Promise<void> = Promise.resolve();

/** A promise, or what `await` would treat as one. */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value instanceof Promise || (value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function');
}

/**
 * One received task message, from receipt to its final ack or reject: the policy Celery applies (early or late
 * acks, retries, time limits, revokes), with the result stored in Celery's format.
 */
export class Request implements HeldTask {
  readonly worker: WorkerHost;
  readonly delivery: Delivery;
  readonly message: TaskMessage;
  readonly task: Task;
  // Both controllers are made on first use: most tasks never read their signal or get killed, and an
  // AbortController per message is a measurable share of a worker's time under a flood of short tasks.
  /** The task's signal: soft time limit, hard time limit or terminate, whichever comes first. */
  #abort: AbortController | undefined;
  /** What the run sent (its context's trail), stored as the result's `children`. */
  #children: ResultTuple[] | undefined;
  /** Hard time limit or terminate, even after a soft limit: the run is abandoned and its pool child killed. */
  #kill: AbortController | undefined;
  /** Ends the current run's race with the kill reason (set while the task runs). */
  #onKill: ((reason: unknown) => void) | undefined;
  #killReason: Error | undefined;
  timeStart: number | null = null;
  /** When this worker received the message, epoch seconds (the wait before start is a metric). */
  readonly receivedAt = Date.now() / 1000;
  #terminated: string | undefined;
  /** The run's span, when tracing (`@opentelemetry/api` installed). */
  #trace: RunTrace | undefined;
  /** What the run threw, and why it was retried: the span's status and retry reason. */
  #failure: unknown;
  #retryReason: unknown;

  constructor(worker: WorkerHost, delivery: Delivery, message: TaskMessage, task: Task) {
    this.worker = worker;
    this.delivery = delivery;
    this.message = message;
    this.task = task;
  }

  get id(): string {
    return this.message.id;
  }

  /** The task's fields on its log lines, when the log is structured (JSON); nothing to build for text lines. */
  logFields(): Readonly<Record<string, unknown>> | undefined {
    return this.worker.log.structured ? { task_id: this.id, task_name: this.name } : undefined;
  }

  get name(): string {
    return this.message.name;
  }

  get acknowledged(): boolean {
    return this.delivery.acknowledged;
  }

  get acksLate(): boolean {
    return this.task.options.acksLate ?? this.worker.app.conf.taskAcksLate;
  }

  /** True (and recorded as revoked) when the task was revoked or its `expires` passed. */
  isRevoked(): boolean {
    const { expires } = this.message;
    if (expires && expires.getTime() <= Date.now()) {
      this.worker.state.revoked.add(this.id);
      return true;
    }
    return this.worker.state.revoked.has(this.id) || this.worker.state.revokedStamps.revoking(this.message.stamps) !== undefined;
  }

  /** Acks the message and records the revoke (REVOKED state, event), as Celery does for revoked and expired tasks. */
  async discardRevoked(): Promise<void> {
    const expired = this.message.expires !== null && this.message.expires.getTime() <= Date.now();
    const reason = expired ? 'expired' : 'revoked';
    this.worker.log.info(`Discarding ${reason} task: ${this.name}[${this.id}]`);
    const info = { exc_type: 'TaskRevokedError', exc_message: [reason], exc_module: 'celery.exceptions' };
    // The body only where needed: a chord member (in a group) names its chord there, an extended result its args.
    if (taskBodyPending(this.message) && (this.message.group !== null || this.worker.app.conf.resultExtended)) this.#readBody();
    await this.#store('REVOKED', info, null);
    await chordPartReturn(this.worker.app, this.worker.log, this.message, 'REVOKED', info, this.#requestInfo());
    this.worker.emitTask('revoked', this, { terminated: false, signum: null, expired });
    await this.#settle('ack');
  }

  /**
   * True (and the request forgotten) when its delivery went stale before it started: the channel that delivered it
   * closed, or its claim was taken back, so the broker hands the message out again — running it here too would run
   * it twice (Celery's consumer drops its reserved requests on connection loss the same way).
   */
  dropIfStale(): boolean {
    if (!this.delivery.stale) return false;
    this.worker.log.log('info', `Task ${this.name}[${this.id}] not started: its delivery was lost with its channel and will be redelivered`, this.logFields());
    this.worker.state.reserved.delete(this);
    return true;
  }

  /** Aborts a running task revoked with terminate: stored REVOKED and acked, as Celery does. */
  terminate(reason: string): void {
    this.#terminated = reason;
    this.#killWith(new TaskRevokedError(`Task ${this.name}[${this.id}] terminated: ${reason}`));
  }

  /**
   * Abandons a running task because the worker is stopping (cold shutdown, warm shutdown past its timeout). Unlike a
   * revoke this is not the task's fault: nothing is stored, and an acks-late message goes back to its queue to run
   * again; an early-acked one is gone (Celery's at-most-once for early acks), which is logged.
   */
  abandon(reason: string): void {
    this.#terminated = reason;
    this.#killWith(new WorkerShutdownError(`Task ${this.name}[${this.id}] abandoned: ${reason}`));
  }

  /** Reads the body the worker left for the run into the message; what made it unreadable, if it was. */
  #readBody(): unknown {
    try {
      readTaskBody(this.message, this.delivery, this.worker.taskDecodeOptions);
      return undefined;
    } catch (error) {
      return error;
    }
  }

  #abortController(): AbortController {
    return (this.#abort ??= new AbortController());
  }

  #signal = (): AbortSignal => this.#abortController().signal;

  #killWith(error: Error): void {
    this.#killReason ??= error;
    this.#abortController().abort(error);
    this.#kill?.abort(error);
    this.#onKill?.(error);
  }

  info(safe = false): RequestInfo {
    if (!safe && taskBodyPending(this.message)) this.#readBody();
    return {
      id: this.id,
      name: this.name,
      args: safe ? this.message.argsrepr : this.message.args,
      kwargs: safe ? this.message.kwargsrepr : this.message.kwargs,
      type: this.name,
      hostname: this.worker.hostname,
      time_start: this.timeStart,
      acknowledged: this.acknowledged,
      delivery_info: {
        exchange: this.delivery.deliveryInfo.exchange,
        routing_key: this.delivery.deliveryInfo.routingKey,
        priority: this.message.priority,
        redelivered: this.delivery.deliveryInfo.redelivered || (this.worker.redeliveredFlag ? false : null),
      },
      // Celery's process pool reports the child running it; threads share this process's pid.
      worker_pid: this.timeStart === null ? null : ((this.worker.pool.name === 'processes' ? this.worker.pool.runningOn?.(this.id) : undefined) ?? process.pid),
    };
  }

  /**
   * Runs the task in the current pool slot. Never rejects: every outcome is settled and stored here. `release` frees
   * the slot once the result is stored and callbacks are sent, so the next task does not wait for this one's ack.
   * Not async: a task that returns at once, with nothing to store or send after it and acks late, runs and settles
   * without a promise of its own (the ack's is what the pool waits for); under AsyncLocalStorage, which a worker
   * running tasks enables, every promise costs a hook, and a flood of short tasks pays it per task.
   */
  execute(release: () => void): Promise<void> {
    const { worker } = this;
    if (this.dropIfStale()) return DONE;
    if (this.isRevoked()) return this.#discardRevokedReady();
    if (taskBodyPending(this.message)) {
      const unreadable = this.#readBody();
      if (unreadable !== undefined) return this.#refuseUnreadable(unreadable);
    }
    this.timeStart = Date.now() / 1000;
    worker.state.taskAccepted(this);
    if (!this.acksLate || this.#trackStarted()) return this.#startThenRun(release);
    worker.emitTask('started', this);
    return this.#runAndSettle(release);
  }

  async #discardRevokedReady(): Promise<void> {
    await this.discardRevoked();
    this.worker.state.taskReady(this);
  }

  /**
   * Refused before it runs, as a body read on receipt would have been: same reason, same dead-lettering. It was
   * announced (task-received), so monitors also hear that it ended: task-rejected, not requeued.
   */
  async #refuseUnreadable(unreadable: unknown): Promise<void> {
    const { worker } = this;
    worker.state.taskReady(this);
    await worker.rejectUnreadable(this.delivery, unreadable);
    worker.emitTask('rejected', this, { requeue: false });
  }

  /** The early ack (acks on receipt) and the STARTED state, each awaited before the run, then the run. */
  async #startThenRun(release: () => void): Promise<void> {
    const { worker } = this;
    if (!this.acksLate) await this.#settle('ack');
    worker.emitTask('started', this);
    if (this.#trackStarted()) await this.#store('STARTED', { pid: process.pid, hostname: worker.hostname }, null);
    return this.#runAndSettle(release);
  }

  #runAndSettle(release: () => void): Promise<void> {
    const { worker } = this;
    const started = performance.now();
    this.#trace = startRunTrace(this.message, this.delivery.deliveryInfo, worker.app.conf.broker, worker.hostname);
    const inline = this.#trace === undefined && this.#killReason === undefined ? worker.pool.invoke : undefined;
    if (inline === undefined) return this.#ending((timers) => this.#runToOutcome(this.#run(timers, started), started, release));
    // On the event loop, untraced: the task is called here, and one that returned (not a promise) settles inline.
    let value: unknown;
    try {
      value = inline.call(worker.pool, this.#context());
    } catch (error) {
      return this.#endFailed(error, started, release);
    }
    if (isThenable(value)) return this.#ending((timers) => this.#runToOutcome(this.#limited(Promise.resolve(value), timers, started), started, release));
    let after: Promise<void> | undefined;
    try {
      after = this.#afterSuccess(value, started, release);
    } catch (error) {
      return this.#endFailed(error, started, release);
    }
    if (after === undefined) {
      this.#ended('succeeded');
      return DONE;
    }
    // What follows a success may throw (a `task-succeeded` listener): handled as a failure of the run, as on the
    // awaited path.
    return after.then(
      () => this.#ended('succeeded'),
      (error: unknown) => this.#endFailed(error, started, release),
    );
  }

  /** What failed on the inline path, ended on the awaited one: handled as a run that threw `error`. */
  #endFailed(error: unknown, started: number, release: () => void): Promise<void> {
    return this.#ending(() => this.#runToOutcome(Promise.reject(error), started, release));
  }

  /**
   * Waits for the outcome `run` gives (it may start time-limit timers in the list it is handed), then ends the run:
   * the timers cleared, the request ready (also when it threw past every handler).
   */
  async #ending(run: (timers: LongTimeout[]) => Promise<Outcome>): Promise<void> {
    const timers: LongTimeout[] = [];
    let outcome: Outcome;
    try {
      // With a span, the whole run, its result's storing and its callbacks happen with it active, so what they send
      // continues the trace; without one, no closure is made for it.
      outcome = this.#trace ? await this.#trace.within(() => run(timers)) : await run(timers);
    } catch (error) {
      this.worker.state.taskReady(this);
      throw error;
    } finally {
      for (const timer of timers) timer.clear();
    }
    this.#ended(outcome);
  }

  /** The request is ready: no longer active; its span ends with the outcome. */
  #ended(outcome: Outcome): void {
    const { worker } = this;
    worker.state.taskReady(this);
    this.#trace?.end(outcome, this.#failure, this.#retryReason);
    if (worker.log.enabled('debug')) worker.log.debug(`Task ${this.name}[${this.id}] ${outcome}`);
  }

  /** Waits for the run (`running`) and settles it: stores the result or handles the error, sends what follows, acks. */
  async #runToOutcome(running: Promise<unknown>, started: number, release: () => void): Promise<Outcome> {
    try {
      const value = await running;
      const after = this.#afterSuccess(value, started, release);
      if (after) await after;
      return 'succeeded';
    } catch (error) {
      // Kept for the run's span (which records the failure, or the retry's reason).
      this.#failure = error;
      const outcome = await this.#handleError(error);
      if (outcome === 'retried') this.#retryReason = error instanceof Retry ? (error.exc ?? error) : error;
      return outcome;
    }
  }

  /**
   * What follows a run that returned `value`: the succeeded set, the result stored, `task-succeeded`, the callbacks
   * and chord part sent, the slot released, the late ack. A promise only when there is something to wait for: the
   * result's storing or what follows it (then all of it), else the ack's (none when acked early).
   */
  #afterSuccess(value: unknown, started: number, release: () => void): Promise<void> | undefined {
    const { worker } = this;
    worker.state.succeeded.add(this.id);
    const runtime = (performance.now() - started) / 1000;
    // Built only when it is written: a flood of short tasks would spend its time formatting lines nobody sees.
    if (worker.log.enabled('info')) worker.log.log('info', `Task ${this.name}[${this.id}] succeeded in ${runtime.toFixed(6)}s: ${resultPreview(value)}`, this.logFields());
    const storing = this.#store('SUCCESS', value, null);
    const { message } = this;
    if (storing || message.callbacks?.length || message.chain?.length || message.chord) return this.#storeThenFollow(storing, value, runtime, release);
    worker.emitTask('succeeded', this, { result: value, runtime });
    release();
    return this.acksLate ? this.#settle('ack') : undefined;
  }

  async #storeThenFollow(storing: Promise<void> | undefined, value: unknown, runtime: number, release: () => void): Promise<void> {
    const { worker, message } = this;
    if (storing) await storing;
    worker.emitTask('succeeded', this, { result: value, runtime });
    if (message.callbacks?.length || message.chain?.length) await sendCallbacks(worker.app, worker.log, message, value);
    if (message.chord) await chordPartReturn(worker.app, worker.log, message, 'SUCCESS', value, this.#requestInfo());
    release();
    if (this.acksLate) await this.#settle('ack');
  }

  /**
   * The task could not finish because its pool child died (or it crashed its worker too often). As Celery's
   * `on_failure`: with `acksLate` and `rejectOnWorkerLost` the message is requeued (no FAILURE, no task-failed);
   * otherwise FAILURE(WorkerLostError) is stored and the message acked (late: unless `acksOnFailureOrTimeout` is off,
   * then rejected without requeue).
   */
  async failWorkerLost(reason: string | WorkerLostError): Promise<'failed' | 'rejected'> {
    const error = typeof reason === 'string' ? new WorkerLostError(reason) : reason;
    const { worker } = this;
    const requeue = this.acksLate && (this.task.options.rejectOnWorkerLost ?? worker.app.conf.taskRejectOnWorkerLost);
    if (requeue) {
      worker.log.log('warning', `Task ${this.name}[${this.id}] lost its worker (${error.message}); requeued (rejectOnWorkerLost)`, this.logFields());
      await this.#settle('requeue');
      worker.emitTask('rejected', this, { requeue: true });
      return 'rejected';
    }
    worker.log.log('error', `Task ${this.name}[${this.id}] raised unexpected: ${describeError(error)}`, this.logFields());
    await this.#fail(exceptionInfo(error), error.stack ?? null);
    worker.emitTask('failed', this, { exception: error });
    await sendErrbacks(worker.app, worker.log, this.message, { request: this.#requestInfo(), error, traceback: error.stack ?? null });
    const ackAnyway = !this.acksLate || (this.task.options.acksOnFailureOrTimeout ?? worker.app.conf.taskAcksOnFailureOrTimeout);
    await this.#settle(ackAnyway ? 'ack' : 'reject', describeError(error));
    return 'failed';
  }

  /** The context the task function is called with; what it sends is kept as the result's `children`. */
  #context(): TaskContext {
    const { task, worker } = this;
    const taskLog = worker.taskLogger(this.name);
    const fields = this.logFields();
    const context = new TaskContext(worker.app, task, this.#requestInfo(), this.#signal, fields ? taskLog.with(fields) : taskLog);
    this.#children = context.children;
    return context;
  }

  /** Runs the task in its pool, within its time limits (see `#limited`). */
  #run(timers: LongTimeout[], started: number): Promise<unknown> {
    const { worker } = this;
    const context = this.#context();
    // The event loop cannot kill a function; child pools get a kill signal to end the child running it.
    const running = worker.pool.name === 'async' ? worker.pool.run(context) : worker.pool.run(context, (this.#kill ??= new AbortController()).signal);
    return this.#limited(running, timers, started);
  }

  /**
   * `running` within the task's time limits, counted from `started` (the run may have begun before this is called):
   * one promise settled by whichever comes first — the run, the hard limit, a terminate — rather than a race of
   * three. The soft limit only aborts the task's signal.
   */
  #limited(running: Promise<unknown>, timers: LongTimeout[], started: number): Promise<unknown> {
    const { message, task, worker } = this;
    const soft = message.softTimeLimit ?? task.options.softTimeLimit ?? worker.softTimeLimit(task.name);
    const hard = message.timeLimit ?? task.options.timeLimit ?? worker.timeLimit(task.name);
    const elapsedMs = performance.now() - started;
    if (soft !== null && soft > 0) {
      timers.push(
        setLongTimeout(
          () => {
            worker.log.warning(`Soft time limit (${soft}s) exceeded for ${this.name}[${this.id}]`);
            this.#abortController().abort(new SoftTimeLimitExceeded(`Soft time limit (${soft}s) exceeded for ${this.name}[${this.id}]`));
          },
          Math.max(0, soft * 1000 - elapsedMs),
        ),
      );
    }
    return new Promise<unknown>((resolve, reject) => {
      running.then(resolve, reject);
      if (hard !== null && hard > 0) {
        // An async function cannot be killed: on the hard limit we abort its signal, stop waiting, fail it and free
        // the slot. Thread and process pools also kill the child running it (the abort reaches `pool.run`).
        timers.push(
          setLongTimeout(
            () => {
              const error = new TimeLimitExceeded(`Hard time limit (${hard}s) exceeded for ${this.name}[${this.id}]`);
              this.#killWith(error);
              reject(error);
            },
            Math.max(0, hard * 1000 - elapsedMs),
          ),
        );
      }
      // A terminate ends the run (the hard limit ends it above); a soft limit only aborts the signal.
      if (this.#killReason !== undefined && this.#terminated) reject(this.#killReason);
      this.#onKill = (reason) => {
        if (this.#terminated) reject(reason);
      };
    });
  }

  async #handleError(thrown: unknown): Promise<Outcome> {
    const { worker } = this;
    let error = this.#softLimitCause(thrown);
    // Checked first: a child pool reports the child it killed for us as WorkerLostError.
    if (this.#killReason instanceof WorkerShutdownError) return this.#giveBack(this.#killReason);
    if (error instanceof WorkerLostError) return this.failWorkerLost(error); // the task did not fail: its child died
    if (!(error instanceof Retry) && !(error instanceof Reject) && !(error instanceof Ignore) && this.#shouldAutoretry(error)) {
      try {
        const retries = this.message.retries;
        const backoff = this.task.options.retryBackoff;
        const countdown = backoff
          ? backoffCountdown(retries, {
              factor: backoff === true ? 1 : backoff,
              maximum: this.task.options.retryBackoffMax ?? 600,
              jitter: this.task.options.retryJitter ?? true,
            })
          : undefined;
        const context = new TaskContext(worker.app, this.task, this.#requestInfo(), this.#signal, worker.log);
        await context.retry({ exc: error, ...(countdown === undefined ? {} : { countdown }) });
      } catch (retryError) {
        error = retryError;
      }
    }
    if (error instanceof Retry) {
      worker.log.log('info', `Task ${this.name}[${this.id}] retry: ${error.message}`, this.logFields());
      const cause = error.exc;
      await this.#store('RETRY', cause === undefined ? null : exceptionInfo(cause), cause instanceof Error ? (cause.stack ?? null) : null);
      worker.emitTask('retried', this, { exception: cause ?? null });
      await this.#settle('ack');
      return 'retried';
    }
    if (error instanceof Reject) {
      worker.log.log('info', `Task ${this.name}[${this.id}] rejected (requeue=${error.requeue}): ${error.reason}`, this.logFields());
      if (!error.requeue) await this.#store('REJECTED', exceptionInfo(error), null);
      worker.emitTask('rejected', this, { requeue: error.requeue });
      await this.#settle(error.requeue ? 'requeue' : 'reject', `Reject: ${error.reason}`);
      return 'rejected';
    }
    if (error instanceof Ignore) {
      await this.#settle('ack');
      return 'ignored';
    }
    if (error instanceof TaskRevokedError) {
      worker.log.log('info', `Task ${this.name}[${this.id}] terminated: ${this.#terminated ?? error.message}`, this.logFields());
      const info = { exc_type: 'TaskRevokedError', exc_message: ['terminated'], exc_module: 'celery.exceptions' };
      await this.#store('REVOKED', info, null);
      await chordPartReturn(worker.app, worker.log, this.message, 'REVOKED', info, this.#requestInfo());
      worker.emitTask('revoked', this, { terminated: true, signum: 15, expired: false });
      await this.#settle('ack');
      return 'revoked';
    }
    const timeout = error instanceof TimeLimitExceeded;
    const stack = error instanceof Error ? (error.stack ?? null) : null;
    worker.log.log('error', `Task ${this.name}[${this.id}] raised unexpected: ${describeError(error)}${stack && !timeout ? `\n${stack}` : ''}`, this.logFields());
    await this.#fail(exceptionInfo(error), stack);
    worker.emitTask('failed', this, { exception: error });
    await sendErrbacks(worker.app, worker.log, this.message, { request: this.#requestInfo(), error, traceback: stack });
    if (this.acksLate) {
      const ackAnyway = this.task.options.acksOnFailureOrTimeout ?? worker.app.conf.taskAcksOnFailureOrTimeout;
      await this.#settle(ackAnyway ? 'ack' : timeout ? 'requeue' : 'reject', describeError(error));
    }
    return 'failed';
  }

  /** The worker stopped under the task: requeue it (acks late) without a result; an early-acked one is lost. */
  async #giveBack(reason: WorkerShutdownError): Promise<Outcome> {
    const { worker } = this;
    if (this.acksLate) {
      worker.log.log('warning', `Task ${this.name}[${this.id}] ${reason.message.replace(/^Task \S+ /, '')}; returned to its queue to run again`, this.logFields());
      await this.#settle('requeue');
      return 'rejected';
    }
    worker.log.warning(
      `Task ${this.name}[${this.id}] ${reason.message.replace(/^Task \S+ /, '')}; it was acknowledged when it started (acksLate is off), ` +
        'so it will not run again — set acksLate for tasks that must survive a shutdown',
    );
    return 'ignored';
  }

  /**
   * What a task threw because its soft time limit aborted its signal — an `AbortError` from `fetch`, a stream, a
   * timer — is that limit: stored as Celery's `SoftTimeLimitExceeded`, as a Python task's would be, not as the
   * AbortError the platform raised.
   */
  #softLimitCause(error: unknown): unknown {
    const reason = this.#abort?.signal.aborted ? (this.#abort.signal.reason as unknown) : undefined;
    if (!(reason instanceof SoftTimeLimitExceeded) || error === reason) return error;
    const isAbort = error instanceof Error && (error.name === 'AbortError' || error.cause === reason);
    return isAbort ? reason : error;
  }

  #shouldAutoretry(error: unknown): boolean {
    const autoretry = this.task.options.autoretryFor;
    if (!autoretry) return false;
    if (typeof autoretry === 'function') return autoretry(error);
    return autoretry.some((kind) => error instanceof kind);
  }

  #trackStarted(): boolean {
    return this.task.options.trackStarted ?? this.worker.app.conf.taskTrackStarted;
  }

  #ignoreResult(): boolean {
    return this.message.ignoreResult === true || (this.task.options.ignoreResult ?? this.worker.app.conf.taskIgnoreResult);
  }

  /** Stores the state (unless ignored, or there is no backend: then nothing to wait for, and no promise made). */
  #store(status: TaskState, result: unknown, traceback: string | null): Promise<void> | undefined {
    const failure = status === 'FAILURE' || status === 'REJECTED';
    if (this.#ignoreResult() && !(failure && this.worker.app.conf.taskStoreErrorsEvenIfIgnored)) return undefined;
    const known = this.worker.app.knownBackend;
    return known === null ? undefined : this.#storeIn(known, status, result, traceback);
  }

  async #storeIn(known: ResultBackend | undefined, status: TaskState, result: unknown, traceback: string | null): Promise<void> {
    const backend = known !== undefined ? known : await this.worker.app.backend();
    if (!backend) return;
    const { conf } = this.worker.app;
    const ready = status === 'SUCCESS' || status === 'FAILURE' || status === 'REVOKED' || status === 'REJECTED';
    const dateDone = ready ? formatDateDone(new Date(), conf.resultDateDone) : null;
    const extension = conf.resultExtended ? { worker: this.worker.hostname, queue: this.delivery.deliveryInfo.routingKey } : null;
    const meta = taskResultMeta(this.message, status, result, traceback, this.#children ?? [], dateDone, extension);
    try {
      const { replyTo, correlationId } = this.message;
      await backend.store(meta, replyTo ? { expiresMs: conf.resultExpires * 1000, replyTo, correlationId } : { expiresMs: conf.resultExpires * 1000, correlationId });
    } catch (error) {
      this.worker.log.error(`Could not store the ${status} result of ${this.name}[${this.id}]: ${describeError(error)}`);
    }
  }

  /** Stores FAILURE, fails the rest of its chain and records its chord part (Celery's `mark_as_failure`). */
  async #fail(info: unknown, traceback: string | null): Promise<void> {
    await this.#store('FAILURE', info, traceback);
    const { app, log } = this.worker;
    if (this.message.chord) await chordPartReturn(app, log, this.message, 'FAILURE', info, this.#requestInfo());
    if (this.message.chain?.length) await failRemainingChain(app, log, this.message, 'FAILURE', info, traceback, this.#requestInfo());
  }

  /**
   * `reason` goes with a reject (kept with the message where the transport keeps rejected ones). Not async: the
   * transport's promise and one continuation are all a settle costs (it runs once per task).
   */
  #settle(action: 'ack' | 'reject' | 'requeue', reason?: string): Promise<void> | undefined {
    if (this.delivery.acknowledged) return undefined;
    let settling: Promise<void>;
    try {
      settling = action === 'ack' ? this.delivery.ack() : action === 'reject' ? this.delivery.reject(reason) : this.delivery.requeue();
    } catch (error) {
      settling = Promise.reject(error);
    }
    return settling.then(
      () => this.worker.emitSettled(this, action),
      (error: unknown) => {
        // The broker already gave the message to someone else (lease lost, channel closed): nothing to undo here,
        // and at-least-once delivery means it will run again elsewhere.
        const level = error instanceof StaleDeliveryError || error instanceof KqError ? 'warning' : 'error';
        this.worker.log.log(level, `Could not ${action} ${this.name}[${this.id}]: ${describeError(error)}`);
      },
    );
  }

  #requestInfo(): TaskRequest {
    const { message, delivery, worker } = this;
    return {
      id: message.id,
      name: message.name,
      args: message.args,
      kwargs: message.kwargs,
      retries: message.retries,
      eta: message.eta,
      expires: message.expires,
      rootId: message.rootId,
      parentId: message.parentId,
      group: message.group,
      groupIndex: message.groupIndex,
      origin: message.origin,
      correlationId: message.correlationId,
      replyTo: message.replyTo,
      priority: message.priority,
      timeLimit: message.timeLimit,
      softTimeLimit: message.softTimeLimit,
      hostname: worker.hostname,
      deliveryInfo: delivery.deliveryInfo,
      properties: delivery.properties,
      headers: message.headers,
      traceparent: this.#trace?.traceparent ?? null,
      message,
    };
  }
}
