import { randomUUID } from 'node:crypto';
import {
  brandClass,
  Connection,
  KqError,
  claimPackageCopy,
  LamportClock,
  Producer,
  createResultBackend,
  defaultSerializers,
  hasCompression,
  type MessagePublishParams,
  type ResultBackend,
} from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import { builtinTasks, Signature, type BuiltinContext, type SignatureOptions } from '../canvas/index';
import { normalizeSettings, type CelerySettings } from '../config/celery-settings';
import type { ClusterOptions } from '../cluster/cluster-options';
import { withClusterSteps } from '../cluster/cluster-steps';
import { DEFAULT_CONFIG, type AppConfig, type EtaStrategy } from '../config/config';
import { Control } from '../control/control';
import { currentTask } from '../send/current-task';
import { openTelemetry } from '../telemetry/open-telemetry';
import { startPublishTrace, withTraceHeaders, type PublishTrace } from '../telemetry/task-tracing';
import { sendTaskSentEvent, taskSentFields } from '../events/task-sent';
import { Logger } from '../log/logger';
import { namesSigning, registerMessageSigning, type SecuritySettings } from '../security/message-signing';
import { definePeriodic, type PeriodicOptions, type PeriodicTask } from '../beat/periodic/define-periodic';
import { prepareTaskMessage, type PreparedTaskMessage, type TaskEmbed } from '../task/prepare-task-message';
import { assertTimeZone } from '../protocol/index';
import { AsyncResult, assertDateDoneForm, registerRpcResultBackend, type Revoker } from '../results/index';
import { Router } from '../send/router';
import { Task, type ApplyOptions, type TaskCall, type TaskFunction, type TaskOptions } from '../task/task';
import { etaStrategyOf, sendDelayMs } from '../runtime/eta';
import { Worker, type WorkerOptions } from '../runtime/worker';

// One copy of @kq/worker per process, or a loud error. Here rather than in index.ts: the CLI and the pool child are
// entries of their own, and all three load this module.
claimPackageCopy('@kq/worker', import.meta.url);

/**
 * Calls a bulk send builds before handing them to the transport: small enough that the broker stores one step while
 * the next is built (the bench's Redis W1 bulk: +20 %), large enough that a step is still one command or statement.
 */
const BULK_STEP = 250;

/** `app.worker()` options: the worker's, and Celery's cluster steps (`-E`, `--without-*`, `--statedb`); false = none. */
export interface AppWorkerOptions extends WorkerOptions {
  cluster?: ClusterOptions | false;
}

registerRpcResultBackend();

/**
 * A Celery app for Node: configuration, the task registry, and sending. `new App('proj', { broker, backend })`,
 * then `app.task(name, fn)` to define tasks and `app.worker()` to run them.
 */
export class App implements AppContract {
  readonly name: string;
  readonly conf: AppConfig;
  /** The app's Lamport clock (events, mingle, `inspect clock`). */
  readonly clock = new LamportClock();
  /** This process's reply address (Celery's `thread_oid`): task `reply_to`, and the rpc:// result queue. */
  readonly threadOid: string = randomUUID();
  readonly tasks = new Map<string, Task<never[], unknown>>();
  readonly router: Router;
  readonly control: Control;
  readonly log: Logger;
  #connection: Connection | undefined;
  #producer: Producer | undefined;
  #backend: Promise<ResultBackend | null> | undefined;
  /** The backend once `#backend` has settled, so each send need not await it. */
  #backendReady: ResultBackend | null | undefined;
  #closing: Promise<void> | undefined;
  /** Loading of the optional codecs the configuration names (msgpack, yaml, bzip2); settled before the first send. */
  readonly #codecs: Promise<void>;
  #codecsLoaded = false;

  /** `config` takes kq's names or Celery's (`accept_content`, `task_default_queue`, `broker_url`...). */
  constructor(name: string, config: Partial<AppConfig> & CelerySettings = {}) {
    this.name = name;
    this.conf = { ...DEFAULT_CONFIG, ...stripUndefined(normalizeSettings(config)) };
    // Misconfiguration fails here, at start-up, not as every message being rejected later.
    if (namesSigning(this.conf)) registerMessageSigning(this.conf);
    defaultSerializers.assertAcceptList(this.conf.acceptContent);
    assertTimeZone(this.conf.timezone);
    assertDateDoneForm(this.conf.resultDateDone);
    // msgpack, yaml and bzip2 live in optional packages: named anywhere in the configuration, they are loaded now,
    // so `acceptContent: ['json', 'msgpack']` works with no other call.
    const { acceptContent, taskSerializer, resultSerializer, taskCompression } = this.conf;
    this.#codecs = defaultSerializers
      .enable([...acceptContent, taskSerializer, resultSerializer, taskCompression])
      // bzip2 is one of Kombu's built-in compressions, so any Celery client may send it: loaded whenever its optional
      // package (compressjs) is installed, named or not.
      .then(() => defaultSerializers.enable(['bzip2']).catch(() => undefined))
      .then(() => {
        this.#codecsLoaded = true;
      });
    this.#codecs.catch(() => undefined); // reported by codecsReady(), where it is awaited
    // An SDK registered before the app was made (the usual order) has the API loaded now, not by the first send.
    openTelemetry();
    this.router = new Router(this.conf);
    // The default queue's declaration is checked now (a delivery limit on a classic queue is refused at start-up).
    this.router.queue(this.conf.taskDefaultQueue);
    this.control = new Control(this);
    this.log = new Logger(name);
    for (const builtin of builtinTasks(this)) this.task(builtin.name, builtin.fn as unknown as TaskFunction<unknown[], unknown>, builtin.options);
  }

  /**
   * A signature of a task by name — registered here or not (a Python task): Celery's `app.signature`. Compose it
   * with `chain`, `group` and `chord` like a task's `.s()`.
   */
  signature<R = unknown>(name: string, args: readonly unknown[] = [], kwargs: Record<string, unknown> = {}, options: SignatureOptions = {}): Signature<R> {
    return new Signature<R>(name, args, kwargs, options, false, null, this);
  }

  /** Revokes by id through remote control: what group results use for `revoke()`. */
  readonly revoker: Revoker = (taskIds, options) => this.control.revoke(taskIds, options);

  /** A call's options with the registered task's own defaults (queue, priority, limits...). */
  withTaskDefaults(name: string, options: ApplyOptions): ApplyOptions {
    const task = this.tasks.get(name);
    return task ? task.withDefaults(options) : options;
  }

  /** The queue the router sends `name` to by default, or null when its route names only an exchange. */
  routeQueue(name: string): string | null {
    return this.router.route(name, [], {}).queue?.name ?? null;
  }

  /** A registered task's function, to run in this process (what `celery.map` runs for each item). */
  localTask(name: string): ((ctx: BuiltinContext, ...args: unknown[]) => unknown) | undefined {
    const task = this.tasks.get(name);
    return task ? (ctx, ...args) => task.fn(ctx as never, ...(args as never[])) : undefined;
  }

  /**
   * Registers a task. The function receives a `TaskContext` first, then its arguments; declare their names
   * (`{ params: ['x', 'y'] }`) to take keyword arguments too, as a Python caller sends them.
   */
  task<A extends unknown[], R, const N extends readonly string[] = never>(
    name: string,
    fn: TaskFunction<A, R>,
    options: TaskOptions<N> = {},
  ): Task<A, R, N> {
    if (this.tasks.has(name)) throw new KqError(`A task named ${JSON.stringify(name)} is already registered in app ${this.name}.`);
    const task = new Task<A, R, N>(this, name, fn, options);
    this.tasks.set(name, task as unknown as Task<never[], unknown>);
    return task;
  }

  /**
   * Registers a self-rescheduling periodic task (the hatchery pattern): its next run is scheduled through the
   * broker's delayed delivery when the current one finishes, so runs never overlap and no scheduler process exists.
   */
  periodic<A extends unknown[], R>(name: string, fn: TaskFunction<A, R>, options: PeriodicOptions<A>): PeriodicTask<A, R> {
    return definePeriodic(this, name, fn, options);
  }

  /**
   * Celery's `app.setup_security()`: signs every task and remote-control message this app sends with the `auth`
   * serializer and accepts only signed ones (`taskSerializer: 'auth'`, `acceptContent: ['auth']`). `options` set the
   * security settings first (Celery's `key`, `cert`, `store`... arguments); the key, certificate and store are read
   * now, so a missing or expired file fails here. Results are not signed (docs/security.md#signed-messages).
   */
  setupSecurity(options: Partial<SecuritySettings> = {}): void {
    const settings: SecuritySettings = { ...this.conf, ...stripUndefined(options) };
    registerMessageSigning(settings);
    Object.assign(this.conf, settings, { taskSerializer: 'auth', acceptContent: ['auth'] });
    // The producer was made with the old serializer.
    this.#producer = undefined;
  }

  /** The broker connection (created on first use). */
  get connection(): Connection {
    this.#connection ??= new Connection(this.conf.broker, {
      transportOptions: {
        ...this.conf.brokerTransportOptions,
        ...(this.conf.brokerUseSsl === null || this.conf.brokerUseSsl === false ? {} : { tls: this.conf.brokerUseSsl }),
      },
      retryPolicy: this.conf.taskPublishRetryPolicy,
      maxMessageSize: this.conf.maxMessageSize,
      // Celery's worker: 2 s, 4 s, 6 s … at most 30 s apart, `broker_connection_max_retries` times.
      connectRetryPolicy: {
        ...(this.conf.brokerConnectionMaxRetries === null ? {} : { maxRetries: this.conf.brokerConnectionMaxRetries }),
        intervalStart: 2000,
        intervalStep: 2000,
        intervalMax: 30_000,
      },
    });
    return this.#connection;
  }

  get producer(): Producer {
    this.#producer ??= new Producer(this.connection, { serializer: this.conf.taskSerializer });
    return this.#producer;
  }

  /** The result backend, or null when `backend` is not configured. */
  backend(): Promise<ResultBackend | null> {
    if (this.#backend) return this.#backend;
    if (!this.conf.backend) {
      this.#backendReady = null;
      this.#backend = Promise.resolve(null);
      return this.#backend;
    }
    const pending = createResultBackend(this.conf.backend, {
      ...this.conf.resultBackendTransportOptions,
      ...(this.conf.redisBackendUseSsl === null || this.conf.redisBackendUseSsl === false ? {} : { tls: this.conf.redisBackendUseSsl }),
      connection: this.connection,
      oid: this.threadOid,
      resultExpiresMs: this.conf.resultExpires * 1000,
      persistent: this.conf.resultPersistent,
    });
    this.#backend = pending;
    pending.then(
      (backend) => {
        // Unless the app was closed (and maybe reconfigured) meanwhile.
        if (this.#backend === pending) this.#backendReady = backend;
      },
      () => undefined, // the caller awaiting `pending` gets the error
    );
    return pending;
  }

  /**
   * The result backend when it is already known — created, or none configured (null) — else undefined. For paths
   * run once per task that must not wait a turn to learn there is no backend.
   */
  get knownBackend(): ResultBackend | null | undefined {
    return this.#backendReady;
  }

  /** A handle on the result of task `id`. */
  async asyncResult<R = unknown>(id: string): Promise<AsyncResult<R>> {
    return new AsyncResult<R>(id, await this.backend());
  }

  /** Sends a task by name — it need not be registered here (Celery's `send_task`). */
  async sendTask<R = unknown>(
    name: string,
    args: readonly unknown[] = [],
    kwargs: Record<string, unknown> = {},
    options: ApplyOptions = {},
  ): Promise<AsyncResult<R>> {
    const id = await this.sendTaskMessage(name, args as unknown[], { ...options, kwargs });
    return new AsyncResult<R>(id, this.#backendReady !== undefined ? this.#backendReady : await this.backend());
  }

  /** Resolves once the serializers and compression the configuration names are loaded (rejects if one is missing). */
  codecsReady(): Promise<void> {
    return this.#codecs;
  }

  /** Encodes, routes and publishes one task message; resolves to its id once the broker has it. */
  async sendTaskMessage(name: string, args: unknown[], options: ApplyOptions, embed: TaskEmbed = {}): Promise<string> {
    if (!this.#codecsLoaded) await this.#codecs;
    const loading = this.#loadCallCodecs(options);
    if (loading) await loading;
    const parent = currentTask();
    const trace = startPublishTrace(name, this.conf.broker);
    const traced = withTraceHeaders(options, trace, parent);
    try {
      const prepared = prepareTaskMessage(this, name, args, traced, Date.now(), embed);
      trace?.sent(prepared.id, prepared.routingKey, prepared.exchange.name);
      const backend = this.#backendReady !== undefined ? this.#backendReady : await this.backend();
      if (backend?.onTaskCall) await backend.onTaskCall(prepared.id);
      await this.producer.publishMessage(prepared.message, this.#publishParams(prepared, sendDelayMs(prepared.eta, this.conf.etaStrategy)));
      if (this.conf.taskSendSentEvent) sendTaskSentEvent(this, taskSentFields(prepared.message, prepared));
      if (options.addToParent !== false) parent?.children.push([[prepared.id, null], null]);
      trace?.end();
      return prepared.id;
    } catch (error) {
      trace?.end(error);
      throw error;
    }
  }

  /**
   * Sends many tasks in one go — the bulk way, like BullMQ's `addBulk`: each message is built exactly as `sendTask`
   * builds it, and the messages bound for the same queue are published together (one `LPUSH` on Redis, one
   * `INSERT` on PostgreSQL), {@link BULK_STEP} calls at a time so the broker takes one step while the next is built.
   * Resolves to their results, in call order, once the broker has them all. It rejects, once every step handed over
   * has settled, when a step fails or a call cannot be sent (its arguments do not serialize, its message is too
   * large); the steps before that may have been sent.
   */
  async sendTasks<R = unknown>(calls: readonly TaskCall[]): Promise<AsyncResult<R>[]> {
    if (!this.#codecsLoaded) await this.#codecs;
    const loading = calls.map((call) => (call.options ? this.#loadCallCodecs(call.options) : undefined)).filter((load) => load !== undefined);
    if (loading.length > 0) await Promise.all(loading);
    const nowMs = Date.now();
    const parent = currentTask();
    const backend = this.#backendReady !== undefined ? this.#backendReady : await this.backend();
    const traces: PublishTrace[] = [];
    const prepared: PreparedTaskMessage[] = [];
    const publishing: Promise<void>[] = [];
    let buildFailure: { reason: unknown } | undefined;
    try {
      for (let from = 0; from < calls.length; from += BULK_STEP) {
        // A turn of the event loop lets the step before reach the socket: the broker stores it while this one is built.
        if (from > 0) await new Promise<void>((resolve) => setImmediate(resolve));
        const step = calls.slice(from, from + BULK_STEP).map((call) => {
          const kwargs = call.kwargs ?? {};
          const trace = startPublishTrace(call.name, this.conf.broker);
          if (trace) traces.push(trace);
          const options = withTraceHeaders(call.options ? { ...call.options, kwargs } : { kwargs }, trace, parent);
          const message = prepareTaskMessage(this, call.name, call.args ?? [], options, nowMs);
          trace?.sent(message.id, message.routingKey, message.exchange.name);
          return message;
        });
        prepared.push(...step);
        if (backend?.onTaskCall) await Promise.all(step.map((message) => backend.onTaskCall?.(message.id)));
        for (const publish of this.#publishStep(step)) {
          // Handled now, awaited below: a step that fails while the next is built is not an unhandled rejection.
          publish.catch(() => undefined);
          publishing.push(publish);
        }
      }
    } catch (error) {
      buildFailure = { reason: error };
    }
    // Every step handed over settles before a failure is thrown: nothing is still being sent once this returns.
    const outcomes = await Promise.allSettled(publishing);
    const failure = buildFailure ?? outcomes.find((outcome) => outcome.status === 'rejected');
    for (const trace of traces) trace.end(failure?.reason);
    if (failure) throw failure.reason;
    if (this.conf.taskSendSentEvent) for (const message of prepared) sendTaskSentEvent(this, taskSentFields(message.message, message));
    return prepared.map((message) => new AsyncResult<R>(message.id, backend));
  }

  /** Publishes one step of a bulk send: a batch per destination, and each delayed message on its own. */
  #publishStep(step: readonly PreparedTaskMessage[]): Promise<void>[] {
    const batches = new Map<string, PreparedTaskMessage[]>();
    const publishing: Promise<void>[] = [];
    for (const message of step) {
      const delay = sendDelayMs(message.eta, this.conf.etaStrategy);
      if (delay > 0) {
        // Each has its own delay: published on its own.
        publishing.push(this.producer.publishMessage(message.message, this.#publishParams(message, delay)));
        continue;
      }
      const key = `${message.exchange.name}\u0000${message.routingKey}\u0000${message.queue?.name ?? ''}`;
      const batch = batches.get(key);
      if (batch) batch.push(message);
      else batches.set(key, [message]);
    }
    for (const batch of batches.values()) {
      publishing.push(
        this.producer.publishMessages(
          batch.map((message) => message.message),
          this.#publishParams(batch[0] as PreparedTaskMessage, 0),
        ),
      );
    }
    return publishing;
  }

  /**
   * A serializer or compression named by one call and not by the configuration (`serializer: 'yaml'`) is loaded on
   * first use, as the configuration's are; undefined (nothing to wait for) when all it names is there.
   */
  #loadCallCodecs(options: ApplyOptions): Promise<void> | undefined {
    const { serializer, compression } = options;
    const missing: string[] = [];
    if (serializer !== undefined && !defaultSerializers.has(serializer)) missing.push(serializer);
    if (compression && !hasCompression(compression)) missing.push(compression);
    return missing.length > 0 ? defaultSerializers.enable(missing) : undefined;
  }

  #publishParams(prepared: PreparedTaskMessage, delay: number): MessagePublishParams {
    const params: MessagePublishParams = {
      exchange: prepared.exchange,
      routingKey: prepared.routingKey,
      declare: prepared.queue ? [prepared.queue] : [],
      retry: this.conf.taskPublishRetry,
      retryPolicy: this.conf.taskPublishRetryPolicy,
    };
    if (delay > 0) params.delay = delay;
    return params;
  }

  /**
   * How a worker waits for ETA tasks: `broker` only when configured so (kq-only fleets); else `worker` — held in
   * memory with the prefetch bump, as Celery does, so the message stays in its queue for any Celery worker.
   */
  etaStrategy(): Promise<EtaStrategy> {
    return Promise.resolve(etaStrategyOf(this.conf));
  }

  /**
   * A worker for this app (not started), with Celery's worker steps — events, Mingle, Gossip, heartbeats, the state
   * file and remote control — unless `cluster: false`.
   */
  worker(options: AppWorkerOptions = {}): Worker {
    const { cluster, ...workerOptions } = options;
    return new Worker(this, { ...workerOptions, steps: withClusterSteps(options.steps, cluster) });
  }

  /**
   * Closes the result backend, remote control and broker connection. Safe to call more than once, also concurrently:
   * every call waits for the one close in progress. The app can be used again afterwards (it reconnects lazily).
   */
  close(): Promise<void> {
    this.#closing ??= this.#close().finally(() => {
      this.#closing = undefined;
    });
    return this.#closing;
  }

  async #close(): Promise<void> {
    const pending = this.#backend;
    this.#backend = undefined;
    this.#backendReady = undefined;
    const backend = await pending?.catch(() => null);
    await backend?.close();
    await this.control.close();
    await this.#connection?.close();
    this.#connection = undefined;
    this.#producer = undefined;
  }
}
brandClass(App, '@kq/worker:App');

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
