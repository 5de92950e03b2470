import { hostname as osHostname } from 'node:os';
import { Consumer, KqError, TypedEmitter, sanitizeUrl, type Delivery, type MailboxNode, type Queue, type Transport } from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import type { TypedTasks } from '../task/task';
import { jsonLogSink } from '../log/log-json-sink';
import { attachTaskMetrics } from '../telemetry/task-metrics';
import { WorkerHttpEndpoint } from './http-endpoint';
import { InvalidTaskError, NotRegistered } from '../errors/errors';
import { Logger } from '../log/logger';
import type { DecodeTaskOptions, TaskMessage } from '../protocol/index';
import { decodeTaskHeaders } from '../protocol/decode-task-message';
import { expandHostname } from '../protocol/nodename';
import { Autoscaler } from '../pool/autoscaler';
import { createPool } from '../pool/create-pool';
import type { Pool } from '../pool/pool';
import { connectLoudly } from './connect-loudly';
import { controlCommands } from './control-commands';
import { deferToBroker, EtaTimer, needsBrokerDelayRoutes, pendingEta } from './eta';
import { fatalConsumerError } from './fatal-consumer-error';
import { settledWithin } from './settled-within';
import { storeFailure, storeNotRegistered, storeUnreadable } from './failure-records';
import { onStopSignals } from '../platform/stop-signals';
import { RedeliveryGuard } from './redelivery';
import { Request } from './request';
import type { WorkerStep } from './bootstep';
import type { TaskEventKind } from '../events/task-event-fields';
import type { WorkerHost } from './worker-host';
import { TaskLimits } from './task-limits';
import { prefetchCount } from './prefetch-count';
import { warnIfPickleAccepted } from './pickle-warning';
import type { WorkerEvents, WorkerOptions } from './worker-options';
export type { WorkerEvents, WorkerOptions } from './worker-options';
import { WorkerState } from './worker-state';

/** The fields of a task event that has none (shared: an event per task would otherwise make an object). */
const NO_FIELDS: Readonly<Record<string, unknown>> = Object.freeze({});
/** How long a stop waits for abandoned tasks to give their messages back before closing the channel anyway. */
const ABANDON_SETTLE_MS = 5000;
/**
 * How long a stopping worker waits for what is left to say to the broker (the control node, the channel giving back
 * unstarted messages, the worker-offline event): with a broker that is down those would wait for it without end.
 */
const BROKER_CLOSE_BOUND_MS = 10_000;

/**
 * Consumes task messages and runs them: prefetch = concurrency × multiplier, revokes and expiry honoured on
 * receipt and before running, ETA tasks deferred to the broker or held (with the prefetch bump), per-task rate
 * limits, acks early or late. Bad input is rejected with a logged reason and never stops the worker.
 */
export class Worker extends TypedEmitter<WorkerEvents> implements WorkerHost {
  readonly app: AppContract<TypedTasks>;
  readonly hostname: string;
  readonly state = new WorkerState();
  readonly pool: Pool;
  /** Set with `autoscale`: grows and shrinks the pool (the `autoscale` control command adjusts it). */
  readonly autoscaler: Autoscaler | null;
  readonly log: Logger;
  #queues: Queue[];
  readonly concurrency: number;
  readonly prefetchMultiplier: number;
  readonly #options: WorkerOptions;
  readonly #eta = new EtaTimer<Request>();
  readonly #redeliveries: RedeliveryGuard;
  readonly #taskLoggers = new Map<string, Logger>();
  readonly #limits: TaskLimits;
  readonly #steps: readonly WorkerStep[];
  readonly #started: WorkerStep[] = [];
  #consumer: Consumer | undefined;
  #http: WorkerHttpEndpoint | undefined;
  /** Stops the OpenTelemetry task metrics (a no-op without `@opentelemetry/api`). */
  #detachMetrics: (() => void) | undefined;
  #node: MailboxNode | undefined;
  #running = false;
  #stopping: Promise<void> | undefined;
  /**
   * The broker marks every delivery redelivered or not (AMQP); else only restored ones are marked, and Celery's
   * `inspect` shows the others' `redelivered` as None (Kombu's virtual transports have no such flag).
   */
  #redeliveredFlag = false;
  #decodeOptions: DecodeTaskOptions | undefined;

  constructor(app: AppContract<TypedTasks>, options: WorkerOptions = {}) {
    super();
    this.app = app;
    this.#options = options;
    this.hostname = expandHostname(options.hostname ?? `kq@${osHostname()}`);
    this.concurrency = Math.max(1, options.autoscale?.max ?? options.concurrency ?? app.conf.workerConcurrency);
    this.prefetchMultiplier = Math.max(0, options.prefetchMultiplier ?? app.conf.workerPrefetchMultiplier);
    this.log =
      options.logger ??
      new Logger(this.hostname, { level: options.loglevel ?? 'info', ...(app.conf.workerLogFormat === 'json' ? { sink: jsonLogSink() } : {}) });
    this.#redeliveries = new RedeliveryGuard(app, this.state, this.log);
    const { autoscale } = options;
    this.pool = createPool({
      kind: options.pool ?? 'async',
      size: autoscale ? (autoscale.min ?? 0) : this.concurrency,
      app,
      log: this.log,
      ...(options.appModule === undefined ? {} : { appModule: options.appModule }),
      ...(options.schedulingStrategy === undefined ? {} : { strategy: options.schedulingStrategy }),
      ...(options.maxTasksPerChild === undefined ? {} : { maxTasksPerChild: options.maxTasksPerChild }),
      ...(options.maxMemoryPerChild === undefined ? {} : { maxMemoryPerChild: options.maxMemoryPerChild }),
    });
    this.autoscaler = autoscale
      ? new Autoscaler({ ...autoscale, pool: this.pool, qty: () => this.state.reserved.size, onResize: () => void this.#updatePrefetch(), log: this.log })
      : null;
    this.#queues = (options.queues ?? [app.conf.taskDefaultQueue]).map((name) => app.router.queue(name));
    this.#steps = [...(options.steps ?? [])];
    this.#limits = new TaskLimits(app);
  }

  /** The task queues consumed now (`add_consumer` / `cancel_consumer` change them). */
  get queues(): readonly Queue[] {
    return this.#queues;
  }

  /** Starts consuming from `queue` too (Celery's `add_consumer`); resolves false when it is consumed already. */
  async addQueue(queue: Queue): Promise<boolean> {
    if (this.#queues.some((q) => q.name === queue.name)) return false;
    this.#queues = [...this.#queues, queue];
    await this.#consumer?.setQueues(this.#queues);
    return true;
  }

  /** Stops consuming from the queue named `name` (Celery's `cancel_consumer`); resolves false when it was not consumed. */
  async cancelQueue(name: string): Promise<boolean> {
    if (!this.#queues.some((q) => q.name === name)) return false;
    this.#queues = this.#queues.filter((q) => q.name !== name);
    await this.#consumer?.setQueues(this.#queues);
    return true;
  }

  get isRunning(): boolean {
    return this.#running;
  }

  /** Started, not stopping, and its consumer consuming on an open channel (`/readyz`). */
  get isConsuming(): boolean {
    return this.#running && !this.#stopping && (this.#consumer?.isConsuming ?? false);
  }

  /** The HTTP endpoint (`httpPort`), once started. */
  get http(): WorkerHttpEndpoint | undefined {
    return this.#http;
  }

  /** The consumer's current prefetch: it follows the pool as it grows and shrinks, and the ETA tasks held. */
  get prefetchCount(): number {
    const etaTaskLimit = this.app.conf.workerEtaTaskLimit;
    const autoscaleMax = this.autoscaler ? this.autoscaler.max : null;
    return prefetchCount({ multiplier: this.prefetchMultiplier, poolSize: this.pool.limit, autoscaleMax, etaHeld: this.#eta.size, etaTaskLimit });
  }

  /** Adds `n` slots to the pool and raises the prefetch to match (`pool_grow`). */
  growPool(n: number): void {
    this.pool.grow(n);
    void this.#updatePrefetch();
  }

  /** Removes `n` slots (busy children leave after their task) and lowers the prefetch (`pool_shrink`). */
  shrinkPool(n: number): void {
    this.pool.shrink(n);
    void this.#updatePrefetch();
  }

  /** Connects, starts answering remote control, then consumes. Resolves once the worker is ready. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    if (this.#options.httpPort !== undefined) {
      // Up before connecting: a probe sees the process alive (/healthz) and not ready (/readyz) while it connects.
      this.#http = new WorkerHttpEndpoint(this, { port: this.#options.httpPort, ...(this.#options.httpHost ? { host: this.#options.httpHost } : {}) });
      await this.#http.start();
    }
    await this.app.codecsReady();
    warnIfPickleAccepted(this.app.conf.acceptContent, this.log);
    const connection = this.app.connection;
    let transport: Transport;
    try {
      await connectLoudly(connection, this.app.conf.broker, this.log);
      transport = await connection.transport();
      this.#redeliveredFlag = transport.capabilities.redeliveredFlag === true;
      this.log.info(`Connected to ${sanitizeUrl(this.app.conf.broker)} (${transport.name})`);
      await this.pool.start();
    } catch (error) {
      this.#running = false;
      await this.#http?.close();
      throw error;
    }
    this.#detachMetrics = attachTaskMetrics(this);
    try {
      await this.#startConsuming(transport);
    } catch (error) {
      // Never left running un-ready (steps beating, nothing consumed): stop what started and say why.
      this.log.critical(`Stopping: the worker could not start consuming: ${error instanceof Error ? error.message : String(error)}`);
      this.emit('fatal', error instanceof Error ? error : new KqError(String(error)));
      await this.stop({ cold: true }).catch(() => undefined);
      throw error;
    }
  }

  /**
   * The bootsteps in order, then the control node and the task consumer side by side; ready once they all run, and
   * what the steps left finishing (Gossip's queue) has settled. Side by side, because each is a few broker round trips
   * on channels of its own: one after another, a worker starting in a busy fleet waited for each in turn.
   */
  async #startConsuming(transport: Transport): Promise<void> {
    const finishing: Promise<void>[] = [];
    for (const step of this.#steps) {
      const started = await step.start(this);
      this.#started.push(step);
      if (started) finishing.push(started.finishing);
    }
    const connection = this.app.connection;

    let listening: Promise<void> | undefined;
    if ((this.#options.enableRemoteControl ?? true) && transport.capabilities.fanout) {
      const commands = Object.assign(controlCommands(this), ...this.#steps.map((step) => step.commands?.(this) ?? {}));
      this.#node = this.app.control.mailbox.node(this.hostname, commands);
      this.#node.on('error', (error) => this.log.warning(`remote control: ${error.message}`));
      listening = this.#node.listen();
    }

    const consumer = new Consumer(connection, {
      queues: this.queues,
      prefetch: this.prefetchCount,
      decode: false,
      onMessage: (_body, delivery) => this.#receive(delivery),
    });
    consumer.on('error', (error) => {
      this.log.error(`consumer: ${error.message}`);
      const fatal = fatalConsumerError(error);
      if (fatal === undefined) return;
      this.log.critical(fatal);
      this.emit('fatal', error);
      void this.stop();
    });
    // Refused by the consumer before the worker sees it (a body over maxMessageSize): reported as the worker's own.
    consumer.on('rejected', (delivery, reason) => {
      this.#reportRejected(delivery, reason);
      void storeUnreadable(this.app, this.log, delivery, reason);
    });
    consumer.on('recovered', () => this.log.warning('consumer: channel lost and recovered; resuming'));
    this.#consumer = consumer;
    // All settled before any failure is thrown: the caller stops the worker then, and nothing may still be starting.
    const outcomes = await Promise.allSettled([consumer.consume(), ...(listening ? [listening] : []), ...finishing]);
    const failed = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    // Celery 5.5+'s DelayedDelivery step, once the consumer has declared the queues: where the broker has a shared
    // delay ladder, route its due messages for our queues to them.
    if (transport.prepareDelayedDelivery && needsBrokerDelayRoutes(await this.app.etaStrategy(), this.queues)) {
      await transport.prepareDelayedDelivery(this.queues).catch((error: unknown) => this.log.warning(`could not set up delayed delivery: ${String(error)}`));
    }
    this.autoscaler?.start();
    const concurrency = this.autoscaler ? `${this.autoscaler.min}..${this.autoscaler.max}` : String(this.pool.limit);
    this.log.info(`${this.hostname} ready: queues [${this.queues.map((q) => q.name).join(', ')}], concurrency ${concurrency} (${this.pool.name}), prefetch ${this.prefetchCount}`);
    this.emit('ready');
  }

  /**
   * Warm shutdown (default): stop consuming, let running tasks finish within `shutdownTimeout`, give back what
   * was not started. Cold (`{ cold: true }`): abort running tasks and give everything back now. Nothing is lost.
   */
  stop(options: { cold?: boolean } = {}): Promise<void> {
    this.#stopping ??= this.#stop(options.cold ?? false);
    if (options.cold) this.#abandonActive('cold shutdown');
    return this.#stopping;
  }

  /** The control node, the consumer's channel and the bootsteps (events, heartbeat, Mingle...), last started first. */
  async #closeBrokerSide(): Promise<void> {
    await this.#node?.close().catch(() => undefined);
    await this.#consumer?.cancel();
    for (const step of this.#started.splice(0).reverse()) {
      await step.stop(this).catch((error: unknown) => this.log.warning(`stopping ${step.name}: ${String(error)}`));
    }
  }

  /** Gives every running task back (acks late: to its queue) instead of waiting for it: the worker is stopping. */
  #abandonActive(reason: string): void {
    for (const request of this.state.active.values()) request.abandon(reason);
  }

  /** Installs SIGTERM/SIGINT handlers: the first signal stops warm, a second one cold. Returns the uninstaller. */
  installSignalHandlers(onStopped: () => void = () => process.exit(0)): () => void {
    return onStopSignals((signal, count) => {
      const cold = count > 1;
      this.log.warning(cold ? `${signal}: cold shutdown (running tasks are aborted and requeued)` : `${signal}: warm shutdown (press Ctrl+C again to force)`);
      void this.stop({ cold }).then(onStopped, (error: unknown) => {
        this.log.error(`shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
        onStopped();
      });
    });
  }

  /** The soft time limit (s) for a task: a remote `time_limit` override, else the app default. */
  softTimeLimit(name: string): number | null {
    return this.#limits.softTimeLimit(name);
  }

  timeLimit(name: string): number | null {
    return this.#limits.timeLimit(name);
  }

  setTimeLimits(name: string, soft: number | null, hard: number | null): void {
    this.#limits.setTimeLimits(name, soft, hard);
  }

  /** Changes a task's rate limit at run time (`rate_limit` control command); null disables it. */
  setRateLimit(name: string, rate: string | number | null): void {
    this.#limits.setRateLimit(name, rate);
  }

  /** ETA tasks held by this worker (`inspect scheduled`). */
  scheduled(): Array<{ eta: Date; request: Request }> {
    return this.#eta.entries().map(({ eta, item }) => ({ eta, request: item }));
  }

  /** The logger a task's context gets: one per task name (not one per run), at the worker's current level. */
  taskLogger(name: string): Logger {
    let logger = this.#taskLoggers.get(name);
    if (!logger) {
      logger = this.log.child(name);
      this.#taskLoggers.set(name, logger);
    }
    logger.level = this.log.level;
    return logger;
  }

  emitTask(kind: TaskEventKind, request: Request, fields: Readonly<Record<string, unknown>> = NO_FIELDS): void {
    this.emit('task', kind, request, fields);
  }

  emitSettled(request: Request, action: 'ack' | 'reject' | 'requeue'): void {
    this.emit('settled', request, action);
  }

  async #updatePrefetch(): Promise<void> {
    await this.#consumer?.setPrefetch(this.prefetchCount).catch((error: unknown) => this.log.warning(`could not update prefetch: ${String(error)}`));
  }

  /** True when the broker marks every delivery redelivered or not (known once started). */
  get redeliveredFlag(): boolean {
    return this.#redeliveredFlag;
  }

  /** Up to the pool. Not async: a task received once, on time, costs no promise; only paths that wait return one. */
  #receive(delivery: Delivery): Promise<void> | undefined {
    if (this.#stopping) return; // left unsettled: given back when the channel closes
    let message: TaskMessage;
    try {
      // The body waits for the run where the headers suffice (Request.execute reads it): a revoked or expired task
      // never decodes it, and a prefetched one holds its bytes rather than their decoded objects.
      message = decodeTaskHeaders(delivery, this.taskDecodeOptions);
    } catch (error) {
      return this.rejectUnreadable(delivery, error);
    }
    const task = this.app.tasks.get(message.name);
    if (!task) return this.#refuseUnknown(delivery, message);
    const request = new Request(this, delivery, message, task as never);
    const counted = this.#redeliveries.deliveriesBefore(delivery);
    if (delivery.deliveryInfo.redelivered || counted === 'republish') return this.#receiveAgain(request, counted);
    return this.#admit(request, counted);
  }

  async #refuseUnknown(delivery: Delivery, message: TaskMessage): Promise<void> {
    await this.#rejectMessage(delivery, new NotRegistered(message.name));
    // As Celery's consumer: FAILURE stored, and a task-failed event, so monitors (Flower, kq events) see it fail.
    await storeNotRegistered(this.app, this.log, message);
    this.emit('unknownTask', message.id, message.name);
  }

  /** A message delivered before (or to be republished with its count): checked for an earlier success first. */
  async #receiveAgain(request: Request, counted: number | 'republish'): Promise<void> {
    const deliveries = await this.#redeliveries.deliveriesOfRedelivered(request.delivery, request.message, counted);
    if (deliveries !== null) await this.#admit(request, deliveries);
  }

  /** Gives up on a message delivered too often, discards a revoked one, holds or defers an ETA one, or reserves it. */
  #admit(request: Request, deliveries: number): Promise<void> | undefined {
    const { message } = request;
    if (deliveries >= this.app.conf.workerMaxRedeliveries) return this.#giveUp(request, deliveries);
    if ((message.expires || this.state.revoked.has(message.id) || this.state.revokedStamps.size > 0) && request.isRevoked()) {
      // Celery announces only the revoke for these, never a task-received.
      return request.discardRevoked();
    }
    const eta = pendingEta(message.eta);
    if (eta) return this.#receiveEta(request, eta, deliveries);
    this.#hold(request, true);
    this.#reserve(request);
    return undefined;
  }

  /** Reserves a received task, logging and announcing it (task-received) unless it was already. */
  #hold(request: Request, announce: boolean): void {
    const { message } = request;
    if (announce && this.log.enabled('info')) {
      this.log.log('info', `Task ${message.name}[${message.id}] received`, this.log.structured ? { task_id: message.id, task_name: message.name } : undefined);
    }
    this.state.reserved.add(request);
    if (announce) this.emitTask('received', request);
    this.autoscaler?.maybeScale();
  }

  async #giveUp(request: Request, deliveries: number): Promise<void> {
    const { delivery, message } = request;
    const reason = `Task ${message.name}[${message.id}] was delivered ${deliveries + 1} times without completing (does it crash its worker?); giving up.`;
    this.log.error(reason);
    this.emit('rejected', delivery, new InvalidTaskError(reason));
    await storeFailure(this.app, this.log, message, { exc_type: 'WorkerLostError', exc_message: [reason], exc_module: 'billiard.exceptions' });
    await delivery.reject(`WorkerLostError: ${reason}`).catch(() => undefined);
  }

  /** A task due later: deferred to the broker, or held by the ETA timer with the prefetch raised by one. */
  async #receiveEta(request: Request, eta: Date, deliveries: number): Promise<void> {
    const { message } = request;
    // Deferred to the broker, it is announced when it comes back to run (as Celery 5.5 announces a message it first
    // sees when it leaves the delay ladder): one task-received per task, not one per trip.
    if (await deferToBroker(this.app, this.log, request, eta)) return;
    // The broker gave back a task this worker still holds (the old claim was taken back, its channel lost): the new
    // delivery replaces the old one, which can no longer be settled, and the task is not announced twice.
    const stillHeld = deliveries > 0 ? this.#eta.find((held) => held.id === message.id) : undefined;
    if (stillHeld) {
      this.#eta.cancel(stillHeld);
      this.state.reserved.delete(stillHeld);
      this.log.info(`Task ${message.name}[${message.id}] redelivered while held; holding the new delivery`);
    }
    this.#hold(request, !stillHeld);
    this.#eta.schedule(request, eta, (due) => {
      void this.#updatePrefetch();
      this.#reserve(due);
    });
    await this.#updatePrefetch();
  }

  /** Hands a request to the pool, through its task's rate limit. */
  #reserve(request: Request): void {
    if (this.#stopping) return;
    if (request.dropIfStale()) return;
    const bucket = this.#limits.bucket(request.name);
    const wait = bucket ? bucket.take() : 0;
    if (wait > 0) {
      setTimeout(() => this.#reserve(request), wait * 1000).unref();
      return;
    }
    this.pool.apply((release) => request.execute(release));
  }

  /** How task messages are decoded: the accept list, the zone of naive times, the most a body may inflate to. */
  get taskDecodeOptions(): DecodeTaskOptions {
    if (this.#decodeOptions) return this.#decodeOptions;
    const { acceptContent: accept, timezone } = this.app.conf;
    const limit = this.app.connection.maxMessageSize;
    return (this.#decodeOptions = { accept, timezone, ...(limit === null ? {} : { maxDecompressedSize: limit }) });
  }

  /** Rejects a message whose task cannot be read (logged, dead-lettered, its FAILURE stored when it names its id). */
  async rejectUnreadable(delivery: Delivery, error: unknown): Promise<void> {
    const reason = error instanceof Error ? error : new InvalidTaskError(String(error));
    await this.#rejectMessage(delivery, reason);
    await storeUnreadable(this.app, this.log, delivery, reason);
  }

  #reportRejected(delivery: Delivery, reason: Error): void {
    this.log.error(`Rejected message ${delivery.deliveryInfo.deliveryTag} from ${delivery.deliveryInfo.queue}: ${reason.name}: ${reason.message}`);
    this.emit('rejected', delivery, reason);
  }

  async #rejectMessage(delivery: Delivery, reason: Error): Promise<void> {
    this.#reportRejected(delivery, reason);
    if (!delivery.acknowledged) {
      await delivery.reject(`${reason.name}: ${reason.message}`).catch((error: unknown) => this.log.warning(`could not reject: ${String(error)}`));
    }
  }

  async #stop(cold: boolean): Promise<void> {
    if (!this.#running) return;
    this.log.info(cold ? 'Cold shutdown' : 'Warm shutdown');
    this.autoscaler?.stop();
    await this.#consumer?.stopConsuming();
    this.#eta.clear(); // held messages are unsettled: the channel close below gives them back
    await this.pool.close(); // jobs not started yet were not acked: given back too
    if (!cold) {
      const timeout = (this.#options.shutdownTimeout ?? this.app.conf.workerShutdownTimeout) * 1000;
      const finished = await settledWithin(this.pool.drained(), timeout);
      if (!finished) {
        this.log.warning(`${this.state.active.size} task(s) still running after ${timeout / 1000}s; giving them back to the queue`);
        this.#abandonActive('shutdown timeout');
      }
    } else {
      this.#abandonActive('cold shutdown');
    }
    // Abandoned runs settle (requeue) now; wait for that before the channel closes, within a bound.
    await settledWithin(this.pool.drained(), ABANDON_SETTLE_MS);
    await this.pool.terminate();
    const closed = await settledWithin(this.#closeBrokerSide(), BROKER_CLOSE_BOUND_MS);
    if (!closed) {
      this.log.warning(
        `Could not finish with the broker within ${BROKER_CLOSE_BOUND_MS / 1000} s (is it down?); stopping anyway. ` +
          'Messages this worker had not started go back to their queue when their lease or visibility timeout runs out.',
      );
    }
    this.#running = false;
    this.#detachMetrics?.();
    this.#detachMetrics = undefined;
    await this.#http?.close();
    this.log.info('Worker stopped');
    this.emit('shutdown');
  }
}
