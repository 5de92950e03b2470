import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync } from 'node:fs';
import { backoffCountdown, EncodeError, KqError } from '@kq/core';
import { WorkerLostError } from '../errors/errors';
import type { Logger } from '../log/logger';
import type { TaskContext } from '../task/task';
import type { ChildHandle } from './child-handle';
import { plainConf, wireRequest, type ChildMessage, type DoneMessage, type PublishMessage } from './child-protocol';
import { childScript } from './child-script';
import { killOf, type Pool, type PoolJob, type SchedulingStrategy } from './pool';
import { PoolChild, type ChildBinding, type ChildRun } from './pool-child';
import { ProcessChild } from './process-child';
import { deserializeError, serializeError } from './serialized-error';
import { ThreadChild } from './thread-child';
import type { ChildPoolOptions } from './child-pool-options';

export type { ChildPoolOptions } from './child-pool-options';
import { describeError } from '../errors/describe-error';

/** The child is freed when its run ends (`#release`): a job's own release has nothing more to free. */
const NO_RELEASE = (): void => undefined;

/**
 * Runs each task in a child — a worker thread or a child process that imported the app module itself — one task
 * per child at a time (Celery's prefork AsyncPool). With `fair`, a job goes to a child only when that child is
 * idle and the rest wait here, oldest first; with `fcfs`, each job is assigned to the next child round-robin when
 * it arrives and waits behind that child's earlier jobs. A child that dies is replaced and its task fails with
 * WorkerLostError; a hard time limit or a terminate kills the child running the task and replaces it.
 */
export class ChildPool implements Pool {
  readonly name: 'threads' | 'processes';
  readonly strategy: SchedulingStrategy;
  readonly #options: ChildPoolOptions;
  readonly #log: Logger;
  #limit: number;
  #active = 0;
  readonly #children = new Set<PoolChild>();
  /** fair: jobs waiting for an idle child; fcfs: jobs not yet assigned to a child (none alive). */
  readonly #waiting: PoolJob[] = [];
  /** Runs whose job lost its child before the task was written; they take the next free child. */
  readonly #rebinds: Array<(child: PoolChild) => void> = [];
  readonly #bindings = new AsyncLocalStorage<ChildBinding>();
  #idleWaiters: Array<() => void> = [];
  #cursor = 0;
  #runSeq = 0;
  #started = false;
  #closed = false;
  #terminating = false;
  /** Children in a row that died before they were ready: respawns back off. */
  #startFailures = 0;
  #respawnTimer: NodeJS.Timeout | undefined;

  constructor(options: ChildPoolOptions) {
    this.name = options.kind;
    this.strategy = options.strategy ?? 'fair';
    this.#options = options;
    this.#log = options.log;
    this.#limit = Math.max(0, Math.trunc(options.size));
  }

  get limit(): number {
    return this.#limit;
  }

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    let queued = this.#waiting.length;
    for (const child of this.#children) queued += child.queue.length;
    return queued;
  }

  /** The live children's ids: process ids, or thread ids. */
  get childIds(): number[] {
    return [...this.#children].filter((child) => child.state !== 'exited').map((child) => child.handle.id);
  }

  /** The id (pid, or thread id) of the child running task `taskId` now, if any (`inspect active` → worker_pid). */
  runningOn(taskId: string): number | undefined {
    for (const child of this.#children) if (child.current?.context.request.id === taskId) return child.handle.id;
    return undefined;
  }

  /** Spawns the children and resolves once every one of them loaded the app module. */
  async start(): Promise<void> {
    const { appModule } = this.#options;
    if (!existsSync(appModule)) {
      throw new KqError(`The ${this.name} pool could not start: Cannot find the app module ${appModule}. Pass the module that exports your App as appModule (kq worker -A).`);
    }
    this.#maintain();
    try {
      await Promise.all([...this.#children].map((child) => child.ready));
    } catch (error) {
      await this.terminate();
      throw new KqError(`The ${this.name} pool could not start: ${describeError(error)}`, { cause: error });
    }
    this.#started = true;
    this.#pump();
  }

  apply(job: PoolJob): void {
    if (this.#closed) return; // not started, not acked: the broker gives the message back
    this.#waiting.push(job);
    this.#pump();
  }

  async run(context: TaskContext, kill: AbortSignal = killOf(context.signal)): Promise<unknown> {
    if (kill.aborted) throw kill.reason;
    const held = this.#bindings.getStore();
    let binding = held && !held.released && held.child.state === 'ready' && !held.child.stopping ? held : undefined;
    // The job's child died before the task was written to it (or there is no job): take the next free child.
    binding ??= await this.#acquire(kill);
    try {
      return await this.#runOn(binding.child, context, kill);
    } finally {
      this.#release(binding);
      if (held && held !== binding) this.#release(held);
    }
  }

  grow(n: number): void {
    this.#limit += Math.max(0, Math.trunc(n));
    this.#maintain();
    this.#pump();
  }

  shrink(n: number): void {
    this.#limit = Math.max(0, this.#limit - Math.max(0, Math.trunc(n)));
    this.#maintain();
    this.#pump();
  }

  drained(): Promise<void> {
    if (this.#active === 0 && this.waiting === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#waiting.length = 0;
    for (const child of this.#children) child.queue.length = 0;
    this.#notifyIdle();
  }

  async terminate(): Promise<void> {
    this.#closed = true;
    this.#terminating = true;
    clearTimeout(this.#respawnTimer);
    const children = [...this.#children];
    const exits = children.map((child) => (child.state === 'exited' ? Promise.resolve() : new Promise<void>((resolve) => child.handle.onExit(() => resolve()))));
    for (const child of children) {
      if (child.current || child.state === 'starting') this.#kill(child, undefined);
      else this.#stop(child);
    }
    await Promise.all(exits);
  }

  info(): Record<string, unknown> {
    const children = [...this.#children].filter((child) => child.state !== 'exited');
    const writes = children.map((child) => child.writes);
    const total = writes.reduce((sum, n) => sum + n, 0);
    const share = (n: number): string => (total && n ? n / total : 0).toFixed(2);
    return {
      'max-concurrency': this.#limit,
      processes: this.name === 'processes' ? children.map((child) => child.handle.id) : [process.pid],
      ...(this.name === 'threads' ? { threads: children.map((child) => child.handle.id) } : {}),
      'max-tasks-per-child': this.#options.maxTasksPerChild ?? 'N/A',
      'put-guarded-by-semaphore': false,
      timeouts: [this.#options.app.conf.taskSoftTimeLimit ?? 0, this.#options.app.conf.taskTimeLimit ?? 0],
      implementation: `kq:${this.name}`,
      writes: {
        total,
        avg: share(writes.length ? total / writes.length : 0),
        all: writes.map(share).join(', '),
        raw: writes.join(', '),
        strategy: this.strategy,
        inqueues: { total: children.length, active: children.filter((child) => child.current !== null).length },
      },
    };
  }

  // -- scheduling --------------------------------------------------------------------------------------------

  #pump(): void {
    if (this.strategy === 'fcfs') this.#assign();
    for (const child of this.#children) {
      if (!child.free) continue;
      const rebind = this.#rebinds.shift();
      if (rebind) {
        rebind(child);
        continue;
      }
      const job = this.strategy === 'fair' ? this.#waiting.shift() : child.queue.shift();
      if (job) this.#start(job, child);
    }
  }

  /** fcfs: every waiting job goes to the next child in turn, busy or not. */
  #assign(): void {
    if (this.#waiting.length === 0) return;
    const targets = [...this.#children].filter((child) => child.state !== 'exited' && !child.retiring && !child.stopping);
    if (targets.length === 0) return;
    for (const job of this.#waiting.splice(0)) {
      const child = targets[this.#cursor++ % targets.length] as PoolChild;
      child.queue.push(job);
    }
  }

  #start(job: PoolJob, child: PoolChild): void {
    const binding: ChildBinding = { child, released: false };
    child.binding = binding;
    this.#active++;
    void this.#bindings
      .run(binding, job, NO_RELEASE)
      .catch(() => undefined)
      .finally(() => {
        this.#release(binding);
        this.#active--;
        this.#pump();
        this.#notifyIdle();
      });
  }

  /** The child is free for the next job as soon as the task ran: storing the result happens without it. */
  #release(binding: ChildBinding): void {
    if (binding.released) return;
    binding.released = true;
    const { child } = binding;
    if (child.binding === binding) child.binding = null;
    if ((child.retiring || child.stopping) && child.idle && child.state === 'ready') this.#stop(child);
    this.#pump();
  }

  #acquire(kill: AbortSignal): Promise<ChildBinding> {
    return new Promise<ChildBinding>((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.#rebinds.indexOf(take);
        if (index >= 0) this.#rebinds.splice(index, 1);
        reject(kill.reason);
      };
      const take = (child: PoolChild): void => {
        kill.removeEventListener('abort', onAbort);
        const binding: ChildBinding = { child, released: false };
        child.binding = binding;
        resolve(binding);
      };
      kill.addEventListener('abort', onAbort, { once: true });
      this.#rebinds.push(take);
      this.#pump();
    });
  }

  #notifyIdle(): void {
    if (this.#active !== 0 || this.waiting !== 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  // -- running a task in a child ------------------------------------------------------------------------------

  #runOn(child: PoolChild, context: TaskContext, kill: AbortSignal): Promise<unknown> {
    const id = ++this.#runSeq;
    const { signal } = context;
    return new Promise<unknown>((resolve, reject) => {
      let settled = false;
      const run: ChildRun = {
        id,
        context,
        finish: (outcome) => {
          if (settled) return;
          settled = true;
          signal.removeEventListener('abort', onAbort);
          kill.removeEventListener('abort', onKill);
          if (child.current === run) child.current = null;
          if (outcome.ok) resolve(outcome.value);
          else reject(outcome.error);
        },
      };
      // The soft time limit: the task sees it through its own signal and may stop cleanly; the hard limit follows
      // if it does not.
      const onAbort = (): void => {
        if (child.current === run && !kill.aborted) this.#send(child, { type: 'abort', id, reason: serializeError(signal.reason) });
      };
      // Hard time limit, terminate, cold shutdown: the function cannot be interrupted, so its child goes.
      const onKill = (): void => {
        if (child.current === run) this.#kill(child, kill.reason);
        run.finish({ ok: false, error: kill.reason });
      };
      child.current = run;
      try {
        child.handle.send({ type: 'run', id, request: wireRequest(context.request) });
      } catch (error) {
        child.current = null;
        reject(error instanceof KqError ? error : new EncodeError(`Cannot pass the task to a pool child: ${describeError(error)}`, { cause: error }));
        return;
      }
      child.writes++;
      signal.addEventListener('abort', onAbort);
      kill.addEventListener('abort', onKill);
      if (kill.aborted) onKill();
      else if (signal.aborted) onAbort();
    });
  }

  #onDone(child: PoolChild, message: DoneMessage): void {
    const run = child.current;
    if (!run || run.id !== message.id) return; // a run already given up (killed, timed out)
    child.tasks++;
    const { maxTasksPerChild, maxMemoryPerChild } = this.#options;
    if (maxTasksPerChild && child.tasks >= maxTasksPerChild) {
      this.#log.info(`Child ${child.handle.id} ran ${child.tasks} tasks (maxTasksPerChild): replacing it`);
      this.#retire(child);
    } else if (maxMemoryPerChild && message.memory > maxMemoryPerChild) {
      this.#log.warning(`Child ${child.handle.id} uses ${message.memory} KiB, over maxMemoryPerChild (${maxMemoryPerChild} KiB): replacing it`);
      this.#retire(child);
    }
    if (message.children?.length) run.context.children.push(...message.children);
    if (message.ok) run.finish({ ok: true, value: message.value });
    else run.finish({ ok: false, error: message.error ? deserializeError(message.error) : new KqError('The task failed in its pool child.') });
  }

  /** Replaces every child: idle ones now, busy ones when their task ends (Celery's `pool_restart`). */
  restart(): void {
    for (const child of [...this.#children]) if (child.state !== 'exited' && !child.retiring && !child.stopping) this.#retire(child, false);
    this.#maintain();
  }

  // -- children ---------------------------------------------------------------------------------------------

  /** Keeps `limit` children that are not leaving: spawns what is missing, retires the surplus (idle ones first). */
  #maintain(): void {
    if (this.#terminating) return;
    const staying = [...this.#children].filter((child) => child.state !== 'exited' && !child.retiring && !child.stopping);
    for (let n = staying.length; n < this.#limit; n++) this.#spawn();
    const surplus = staying.length - this.#limit;
    if (surplus > 0) {
      const rank = (child: PoolChild): number => (child.state === 'starting' ? 0 : child.idle && child.queue.length === 0 ? 1 : child.idle ? 2 : 3);
      for (const child of staying.sort((a, b) => rank(a) - rank(b)).slice(0, surplus)) this.#retire(child, false);
    }
  }

  #spawn(): void {
    let handle: ChildHandle;
    try {
      const script = childScript();
      handle = this.name === 'threads' ? new ThreadChild(script) : new ProcessChild(script);
    } catch (error) {
      this.#log.error(`Could not start a ${this.name} pool child: ${describeError(error)}`);
      this.#scheduleRespawn();
      return;
    }
    const child = new PoolChild(handle);
    this.#children.add(child);
    handle.onMessage((message) => this.#onMessage(child, message));
    handle.onError((error) => this.#log.error(`Pool child ${handle.id}: ${describeError(error)}`));
    handle.onExit((how) => this.#onExit(child, how));
    const startTimer = setTimeout(() => {
      if (child.state !== 'starting') return;
      child.startError = new KqError(`the child did not load ${this.#options.appModule} within ${(this.#options.startTimeout ?? 60_000) / 1000}s`);
      this.#kill(child, undefined);
    }, this.#options.startTimeout ?? 60_000);
    startTimer.unref();
    child.ready.then(
      () => clearTimeout(startTimer),
      () => clearTimeout(startTimer),
    );
    this.#send(child, { type: 'init', appModule: this.#options.appModule, conf: plainConf(this.#options.app.conf), loglevel: this.#log.level });
  }

  #onMessage(child: PoolChild, message: ChildMessage): void {
    switch (message.type) {
      case 'ready':
        if (child.state !== 'starting' || child.stopping) break;
        child.markReady();
        this.#startFailures = 0;
        this.#pump();
        break;
      case 'start-failed':
        child.startError = deserializeError(message.error);
        break;
      case 'log': {
        const run = child.current;
        if (run && run.id === message.id) run.context.log.log(message.level, message.message);
        else this.#log.child(message.logger).log(message.level, message.message);
        break;
      }
      case 'done':
        this.#onDone(child, message);
        break;
      case 'publish':
        this.#relayPublish(child, message);
        break;
    }
  }

  #onExit(child: PoolChild, how: string): void {
    const wasReady = child.state === 'ready';
    this.#children.delete(child);
    child.markExited(child.startError ?? new KqError(`the child exited (${how}) before it loaded ${this.#options.appModule}`));
    const run = child.current;
    child.current = null;
    if (run) {
      const reason = child.killReason ?? new WorkerLostError(`Worker exited prematurely: ${how} Job: ${run.id}.`);
      if (child.killReason === undefined) this.#log.error(`Pool child ${child.handle.id} exited with '${how}' while running ${run.context.request.name}[${run.context.request.id}]`);
      run.finish({ ok: false, error: reason });
    } else if (wasReady && !child.stopping && !child.retiring && !this.#terminating) {
      this.#log.error(`Pool child ${child.handle.id} exited with '${how}'`);
    }
    // fcfs: what waited behind it goes to the others.
    if (child.queue.length > 0) this.#waiting.unshift(...child.queue.splice(0));
    const failedToStart = !wasReady && (child.startError !== undefined || !child.stopping);
    if (!failedToStart) {
      this.#maintain();
    } else if (this.#started && !this.#terminating) {
      // During start() the failure is start()'s to report; afterwards, respawn with a growing delay.
      this.#startFailures++;
      this.#log.error(`A ${this.name} pool child could not start: ${describeError(child.startError ?? how)}`);
      this.#scheduleRespawn();
    }
    this.#pump();
    this.#notifyIdle();
  }

  /** A child that cannot start (a broken app module) must not be respawned in a tight loop. */
  #scheduleRespawn(): void {
    if (this.#terminating || this.#respawnTimer) return;
    const delay = backoffCountdown(this.#startFailures, { factor: 100, maximum: 30_000, jitter: false });
    this.#respawnTimer = setTimeout(() => {
      this.#respawnTimer = undefined;
      this.#maintain();
      this.#pump();
    }, delay);
    this.#respawnTimer.unref();
  }

  /** It takes no more jobs; it leaves now if free, else when its task ends. A replacement is started if needed. */
  #retire(child: PoolChild, replace = true): void {
    child.retiring = true;
    if (child.queue.length > 0) this.#waiting.unshift(...child.queue.splice(0));
    if (child.state === 'starting') this.#kill(child, undefined);
    else if (child.idle) this.#stop(child);
    if (replace) this.#maintain();
  }

  /** Asks a free child to close its app and exit; kills it if it takes too long. */
  #stop(child: PoolChild): void {
    if (child.state === 'exited' || child.stopping) return;
    child.stopping = true;
    this.#send(child, { type: 'shutdown' });
    const timer = setTimeout(() => {
      if (child.state !== 'exited') child.handle.kill();
    }, this.#options.stopTimeout ?? 5000);
    timer.unref();
    child.handle.onExit(() => clearTimeout(timer));
  }

  #kill(child: PoolChild, reason: unknown): void {
    if (child.state === 'exited') return;
    child.stopping = true;
    if (reason !== undefined) child.killReason = reason;
    child.handle.kill();
    // Its replacement starts now, not when the exit is reported.
    this.#maintain();
  }

  #send(child: PoolChild, message: Parameters<ChildHandle['send']>[0]): void {
    try {
      child.handle.send(message);
    } catch (error) {
      this.#log.error(`Could not write to pool child ${child.handle.id}: ${describeError(error)}`);
    }
  }

  #relayPublish(child: PoolChild, message: PublishMessage): void {
    this.#options.app.sendTaskMessage(message.name, message.args, message.options, message.embed).then(
      (taskId) => this.#send(child, { type: 'published', seq: message.seq, taskId }),
      (error: unknown) => this.#send(child, { type: 'published', seq: message.seq, error: serializeError(error) }),
    );
  }
}
