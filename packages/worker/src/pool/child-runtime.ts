import { getHeapStatistics } from 'node:v8';
import { threadId } from 'node:worker_threads';
import { EncodeError, KqError } from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import { NotRegistered } from '../errors/errors';
import { Logger, type LogLevel } from '../log/logger';
import { currentTask } from '../send/current-task';
import { signaturesJson } from '../task/prepare-task-message';
import { TaskContext, type ApplyOptions, type Task, type TypedTasks } from '../task/task';
import type { TaskRequest } from '../task/task-request';
import { autoretry } from './autoretry';
import type { ChildInit, ChildMessage, DoneMessage, ParentMessage, PublishMessage, RunMessage } from './child-protocol';
import { importAppModule } from './import-app-module';
import { deserializeError, serializeError } from './serialized-error';
import { describeError } from '../errors/describe-error';

/** How a child talks to its pool: `parentPort` in a worker thread, the IPC channel in a child process. */
export interface ParentPort {
  readonly kind: 'threads' | 'processes';
  /** Throws EncodeError when the message cannot cross. */
  send(message: ChildMessage): void;
  onMessage(listener: (message: ParentMessage) => void): void;
  /** Ends this child (the thread, or the process). */
  exit(code: number): void;
}

type Embed = PublishMessage['embed'];

/**
 * What runs inside a pool child: loads the app module, then runs one task at a time by name with a TaskContext of
 * its own app (so `ctx.retry()` publishes through this child's connection) and sends back the value or the error.
 * Task log lines go to the parent's logger.
 */
export class ChildRuntime {
  readonly #port: ParentPort;
  #app: AppContract<TypedTasks> | undefined;
  #loglevel: LogLevel = 'info';
  readonly #aborts = new Map<number, AbortController>();
  readonly #publishes = new Map<number, { resolve: (id: string) => void; reject: (error: Error) => void }>();
  #publishSeq = 0;

  constructor(port: ParentPort) {
    this.#port = port;
  }

  listen(): void {
    this.#port.onMessage((message) => this.#handle(message));
    // A promise a task left behind must not take the child (and the next task) down: report it instead.
    process.on('unhandledRejection', (reason) => {
      this.#log(null, 'error', 'kq.pool.child', `Unhandled rejection in a pool child: ${describeError(reason)}`);
    });
  }

  #handle(message: ParentMessage): void {
    switch (message.type) {
      case 'init':
        void this.#init(message);
        break;
      case 'run':
        void this.#run(message);
        break;
      case 'abort':
        this.#aborts.get(message.id)?.abort(deserializeError(message.reason));
        break;
      case 'published': {
        const pending = this.#publishes.get(message.seq);
        this.#publishes.delete(message.seq);
        if (message.error) pending?.reject(deserializeError(message.error));
        else pending?.resolve(message.taskId ?? '');
        break;
      }
      case 'shutdown':
        void this.#shutdown();
        break;
    }
  }

  async #init(init: ChildInit): Promise<void> {
    this.#loglevel = init.loglevel;
    try {
      const app = await importAppModule(init.appModule);
      Object.assign(app.conf, init.conf);
      if (app.conf.broker.startsWith('memory://')) this.#relayPublishes(app);
      this.#app = app;
      this.#port.send({ type: 'ready', pid: process.pid, threadId });
    } catch (error) {
      this.#port.send({ type: 'start-failed', error: serializeError(error) });
      this.#port.exit(1);
    }
  }

  async #run(message: RunMessage): Promise<void> {
    const { id } = message;
    const controller = new AbortController();
    this.#aborts.set(id, controller);
    let done: DoneMessage;
    try {
      const app = this.#app;
      if (!app) throw new KqError('The pool child got a task before it loaded the app module.');
      const request = restoreRequest(message.request);
      const task = app.tasks.get(request.name);
      if (!task) throw new NotRegistered(request.name);
      const log = new Logger(task.name, { level: this.#loglevel, sink: (record) => this.#log(id, record.level, record.logger, record.message) });
      const context = new TaskContext(app, task as unknown as Task, request, controller.signal, log);
      let value: unknown;
      try {
        value = await context.task.invoke(context);
      } catch (error) {
        throw await autoretry(context, error);
      }
      done = { type: 'done', id, ok: true, value, memory: memoryKiB(this.#port.kind), children: context.children };
    } catch (error) {
      done = { type: 'done', id, ok: false, error: serializeError(error), memory: memoryKiB(this.#port.kind) };
    } finally {
      this.#aborts.delete(id);
    }
    try {
      this.#port.send(done);
    } catch (error) {
      const reason = new EncodeError(`The task's return value cannot be sent back to the worker: ${describeError(error)}. Return plain data.`);
      this.#port.send({ type: 'done', id, ok: false, error: serializeError(reason), memory: done.memory });
    }
  }

  async #shutdown(): Promise<void> {
    await this.#app?.close().catch(() => undefined);
    this.#port.exit(0);
  }

  #log(id: number | null, level: LogLevel, logger: string, message: string): void {
    try {
      this.#port.send({ type: 'log', id, level, logger, message });
    } catch {
      // The parent is gone or the line cannot be encoded: nothing better to do with a log line.
    }
  }

  /**
   * An in-process broker (memory://) exists once per thread or process: what a child published to its own would
   * never reach the worker's. So such a child hands its task messages (retries, tasks sent from tasks) to the
   * parent, which publishes them with its app.
   */
  #relayPublishes(app: AppContract<TypedTasks>): void {
    const relay = (name: string, args: unknown[], options: ApplyOptions, embed: Embed = {}): Promise<string> => {
      const { link, linkError, ...plain } = options;
      // The parent publishes it outside any task: whose child it is must be decided here, where the task runs.
      const parent = currentTask();
      if (parent) {
        plain.parentId ??= parent.request.id;
        plain.rootId ??= parent.request.rootId ?? parent.request.id;
        // ... and so is the trace it belongs to: the run's span lives in the worker process.
        if (parent.request.traceparent) plain.headers = { traceparent: parent.request.traceparent, ...plain.headers };
      }
      const message: PublishMessage = {
        type: 'publish',
        seq: ++this.#publishSeq,
        name,
        args,
        options: plain,
        embed: {
          callbacks: embed.callbacks ?? signaturesJson(link),
          errbacks: embed.errbacks ?? signaturesJson(linkError),
          chord: embed.chord ?? null,
        },
      };
      return new Promise<string>((resolve, reject) => {
        this.#publishes.set(message.seq, {
          resolve: (id: string) => {
            if (options.addToParent !== false) parent?.children.push([[id, null], null]);
            resolve(id);
          },
          reject,
        });
        try {
          this.#port.send(message);
        } catch (error) {
          this.#publishes.delete(message.seq);
          reject(error instanceof Error ? error : new EncodeError(String(error)));
        }
      });
    };
    Object.defineProperty(app, 'sendTaskMessage', { value: relay, configurable: true, writable: true });
  }
}

/** The parent sends `message.args`/`kwargs` once, as `args`/`kwargs`: put them back. */
function restoreRequest(request: TaskRequest): TaskRequest {
  return { ...request, message: { ...request.message, args: request.args as unknown[], kwargs: request.kwargs as Record<string, unknown> } };
}

/**
 * What `maxMemoryPerChild` is compared with: a process's resident set; for a thread (whose process RSS is shared),
 * its own V8 heap plus the buffers it allocated.
 */
function memoryKiB(kind: ParentPort['kind']): number {
  if (kind === 'processes') return Math.round(process.memoryUsage.rss() / 1024);
  const heap = getHeapStatistics();
  return Math.round((heap.used_heap_size + heap.external_memory) / 1024);
}
