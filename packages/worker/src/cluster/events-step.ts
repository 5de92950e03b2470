import { pythonStringRepr } from '@kq/core';
import type { HeldTask } from '../runtime/held-task';
import type { WorkerStep } from '../runtime/bootstep';
import type { WorkerHost } from '../runtime/worker-host';
import { EventDispatcher } from '../events/event-dispatcher';
import { taskEventFields, type TaskEventKind } from '../events/task-event-fields';
import type { ClusterContext } from './cluster-context';

/** The event type of each kind, written once rather than for every event. */
const TASK_EVENT_TYPES: Readonly<Record<TaskEventKind, string>> = {
  received: 'task-received',
  started: 'task-started',
  succeeded: 'task-succeeded',
  failed: 'task-failed',
  retried: 'task-retried',
  rejected: 'task-rejected',
  revoked: 'task-revoked',
};

/** Publish failures are logged at most this often (the broker may be down for a while). */
const ERROR_LOG_INTERVAL_MS = 10_000;

/**
 * Celery's `Events` consumer step: the worker's event dispatcher (hostname = node name, the app clock, the app's
 * event exchange), and the worker's task lifecycle forwarded as `task-*` events. Without task events (`-E`) only the
 * `worker` group is sent, as Celery does.
 */
export class EventsStep implements WorkerStep {
  readonly name = 'Events';
  readonly #context: ClusterContext;
  #worker: WorkerHost | undefined;
  #lastErrorLog = 0;
  #suppressed = 0;

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  async start(worker: WorkerHost): Promise<void> {
    if (!this.#context.owns(worker)) return;
    const { app } = worker;
    const taskEvents = this.#context.options.taskEvents ?? app.conf.workerSendTaskEvents;
    this.#context.dispatcher = new EventDispatcher(app.connection, {
      hostname: worker.hostname,
      clock: app.clock,
      exchange: app.conf.eventExchange,
      groups: taskEvents ? [] : ['worker'],
      onError: (error) => this.#logError(worker, error),
    });
    this.#worker = worker;
    worker.on('task', this.#forward);
    worker.on('unknownTask', this.#unknown);
  }

  async stop(worker: WorkerHost): Promise<void> {
    if (this.#worker !== worker) return;
    worker.off('task', this.#forward);
    worker.off('unknownTask', this.#unknown);
    this.#worker = undefined;
    await this.#context.dispatcher?.close(2000);
  }

  readonly #forward = (kind: TaskEventKind, request: HeldTask, details: Record<string, unknown>): void => {
    const dispatcher = this.#context.dispatcher;
    // Three or more events a task, most often with task events off: asked before any string is built.
    if (!dispatcher?.acceptsGroup('task')) return;
    try {
      dispatcher.send(TASK_EVENT_TYPES[kind], taskEventFields(kind, request, details));
    } catch (error) {
      if (this.#worker) this.#logError(this.#worker, error instanceof Error ? error : new Error(String(error)));
    }
  };

  /** Celery's `on_unknown_task` sends exactly this: the id and `NotRegistered('<name>')`, nothing else. */
  readonly #unknown = (taskId: string, name: string): void => {
    const dispatcher = this.#context.dispatcher;
    if (!dispatcher?.accepts('task-failed')) return;
    try {
      dispatcher.send('task-failed', { uuid: taskId, exception: `NotRegistered(${pythonStringRepr(name)})` });
    } catch (error) {
      if (this.#worker) this.#logError(this.#worker, error instanceof Error ? error : new Error(String(error)));
    }
  };

  #logError(worker: WorkerHost, error: Error): void {
    const now = Date.now();
    if (now - this.#lastErrorLog < ERROR_LOG_INTERVAL_MS) {
      this.#suppressed++;
      return;
    }
    const more = this.#suppressed > 0 ? ` (${this.#suppressed} more since the last report)` : '';
    this.#lastErrorLog = now;
    this.#suppressed = 0;
    worker.log.warning(`events: ${error.message}${more}`);
  }
}
