import { KqError, claimPackageCopy, sanitizeUrl, type DelayedCount } from '@kq/core';
import { EventReceiver, Logger, type App } from '@kq/worker';
import type { FastifyInstance } from 'fastify';
import type { DashboardView } from './dashboard-view';
import { FleetState } from './fleet-state';
import { loadFleetState, saveFleetState } from './state-file';
import { buildServer } from './http/server';
import { WorkerInspector } from './worker-inspector';

// One copy of @kq/dashboard per process, or a loud error. Here rather than in index.ts: the CLI loads this module too.
claimPackageCopy('@kq/dashboard', import.meta.url);

export interface DashboardOptions {
  /** The app whose broker, result backend and control exchange the dashboard uses. */
  app: App;
  /** Port to listen on (Flower's 5555; 0 for any free port). */
  port?: number;
  /** Address to listen on (default 127.0.0.1: say 0.0.0.0 to serve beyond this host, with basic auth). */
  address?: string;
  /** Serve everything under this path (`/flower`), behind a proxy that forwards it as is (Flower's `--url_prefix`). */
  urlPrefix?: string;
  /**
   * `user:password` pairs allowed in (HTTP basic auth), as Flower's `--basic-auth`. None: no authentication. The CLI
   * reads them from `--auth-file` or `KQ_DASHBOARD_AUTH`, never from its command line (which `ps` shows).
   */
  basicAuth?: readonly string[];
  /**
   * Behind a reverse proxy: take the scheme and host the browser used from the proxy's `X-Forwarded-Proto` and
   * `X-Forwarded-Host` (the cross-site check compares a request's `Origin` with them). Only when every request comes
   * through the proxy: a client that reaches the dashboard directly could claim any. Default false.
   */
  trustProxy?: boolean;
  /** Tasks kept in memory (Flower's `max_tasks`, 100 000). */
  maxTasks?: number;
  /** How long inspect calls wait for replies, ms (Flower's `inspect_timeout`, 1000). */
  inspectTimeoutMs?: number;
  /**
   * How often workers are inspected again, ms (default 30 000): what changes while a worker runs (`stats`, `active`,
   * `reserved`, `scheduled`, `revoked`), asked only of the workers whose heartbeats or events moved since they last
   * answered (or that the dashboard sent a command). A worker is also inspected in full when it comes online, and
   * `/api/workers?refresh=1` asks everything at once.
   */
  inspectIntervalMs?: number;
  /**
   * How often every worker is asked everything, ms (default 300 000; rounded to a whole number of
   * `inspectIntervalMs`): what does not change during a worker's life (`registered`, `conf`), its queues
   * (`active_queues`, also asked after the dashboard adds or cancels a consumer), and idle workers' `stats` clocks.
   */
  inspectSteadyIntervalMs?: number;
  /** How often queue lengths are sampled, ms (default 5000). */
  queueIntervalMs?: number;
  /**
   * RabbitMQ: the dead-letter queues the Dead letters page reads when none is named (where the task queues'
   * `x-dead-letter-exchange` routes; RabbitMQ cannot be asked). Redis keeps one list and needs none.
   */
  deadLetterQueues?: readonly string[];
  /** Keep what the dashboard saw across restarts in this file (Flower's `--persistent --db`): read at start, written every minute and on close. */
  stateFile?: string;
  logger?: Logger;
}

/**
 * The dashboard: follows the fleet's events (kq and Python workers alike), inspects the workers, samples queue
 * lengths, and serves the web UI, Flower's REST API and Prometheus metrics from one HTTP server.
 *
 *   const dashboard = new Dashboard({ app, port: 5555 });
 *   console.log(await dashboard.start()); // http://127.0.0.1:5555
 */
export class Dashboard implements DashboardView {
  readonly app: App;
  readonly state: FleetState;
  readonly inspector: WorkerInspector;
  readonly log: Logger;
  readonly deadLetterQueues: readonly string[];
  readonly #options: DashboardOptions;
  #receiver: EventReceiver | undefined;
  #server: FastifyInstance | undefined;
  #timers: NodeJS.Timeout[] = [];

  constructor(options: DashboardOptions) {
    this.app = options.app;
    this.#options = options;
    this.log = options.logger ?? new Logger('dashboard');
    this.deadLetterQueues = [...(options.deadLetterQueues ?? [])];
    this.state = new FleetState(options.maxTasks === undefined ? {} : { maxTasks: options.maxTasks });
    const fullRoundEvery = (options.inspectSteadyIntervalMs ?? 300_000) / (options.inspectIntervalMs ?? 30_000);
    this.inspector = new WorkerInspector(this.app, this.state, options.inspectTimeoutMs ?? 1000, { fullRoundEvery });
  }

  /** The URL it serves, once started. */
  get url(): string {
    const address = this.#server?.server.address();
    if (!address || typeof address === 'string') throw new KqError('The dashboard is not started: call start() first.');
    return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}${normalisePrefix(this.#options.urlPrefix)}`;
  }

  /** Connects, starts following events and serving; resolves to the URL. */
  async start(): Promise<string> {
    const { app } = this;
    const { stateFile } = this.#options;
    if (stateFile) {
      const events = await loadFleetState(this.state, stateFile);
      if (events > 0) this.log.info(`dashboard: ${events} events read back from ${stateFile}`);
    }
    await app.connection.connect();
    this.#receiver = new EventReceiver(app.connection, {
      clock: app.clock,
      exchange: app.conf.eventExchange,
      accept: app.conf.acceptContent,
      wakeup: true,
      mailbox: app.control.mailbox,
      handlers: {
        '*': (event) => {
          this.state.event(event);
          // A worker that came online is inspected now: /api/workers would otherwise miss it until the next round.
          if (event.type === 'worker-online') void this.inspector.inspectNewcomer(event.hostname).catch((error: unknown) => this.log.warning(`inspect ${event.hostname}: ${String(error)}`));
        },
      },
    });
    this.#receiver.on('error', (error) => this.log.warning(`events: ${error.message}`));
    await this.#receiver.start();
    this.#server = await buildServer(this, { basicAuth: this.#options.basicAuth ?? [], urlPrefix: normalisePrefix(this.#options.urlPrefix), trustProxy: this.#options.trustProxy ?? false });
    await this.#server.listen({ port: this.#options.port ?? 5555, host: this.#options.address ?? '127.0.0.1' });
    const refresh = (): void => void this.inspector.round().catch((error: unknown) => this.log.warning(`inspect: ${String(error)}`));
    const sample = (): void => void this.sampleQueues().catch((error: unknown) => this.log.warning(`queue lengths: ${String(error)}`));
    refresh();
    this.#timers.push(setInterval(refresh, this.#options.inspectIntervalMs ?? 30_000), setInterval(sample, this.#options.queueIntervalMs ?? 5000));
    if (stateFile) {
      const save = (): void => void saveFleetState(this.state, stateFile).catch((error: unknown) => this.log.warning(`saving ${stateFile}: ${String(error)}`));
      this.#timers.push(setInterval(save, 60_000));
    }
    for (const timer of this.#timers) timer.unref();
    this.log.info(`dashboard for ${sanitizeUrl(app.conf.broker)} on ${this.url}`);
    return this.url;
  }

  /**
   * Reads the length of every queue the workers consume — and of every queue sampled before, so a backlog whose
   * consumers went away stays in view — with its split by priority step where the broker has steps, and the delayed
   * messages the broker holds (by queue where it can tell). Records it for
   * `/api/queues/length`, the queues page and its chart.
   */
  async sampleQueues(): Promise<Array<{ name: string; messages: number }>> {
    const names = [...new Set([...this.state.activeQueueNames(), ...Object.keys(this.state.queueLengths.latest())])];
    const lengths: Record<string, number> = {};
    const steps: Record<string, ReadonlyArray<{ step: number; messageCount: number }>> = {};
    let delayed: DelayedCount | null = null;
    await this.app.connection.ensure(async (channel) => {
      // Queues only delayed messages are for are not added: the delayed set is shared by every app on the database.
      delayed = channel.countDelayed ? await channel.countDelayed().catch(() => null) : null;
      for (const name of names) {
        try {
          lengths[name] = (await channel.checkQueue(name)).messageCount;
          if (channel.checkQueueSteps) steps[name] = await channel.checkQueueSteps(name);
        } catch {
          // a queue that went away meanwhile (AMQP closes the channel: ensure() gives the next one a new channel)
        }
      }
    });
    this.state.queueLengths.record(Date.now() / 1000, lengths);
    this.state.queueSteps = steps;
    this.state.delayed = delayed;
    this.state.metrics.queues(lengths);
    return Object.entries(lengths).map(([name, messages]) => ({ name, messages }));
  }

  async close(): Promise<void> {
    this.inspector.close();
    for (const timer of this.#timers.splice(0)) clearInterval(timer);
    if (this.#options.stateFile && this.#server) await saveFleetState(this.state, this.#options.stateFile);
    await this.#server?.close();
    this.#server = undefined;
    await this.#receiver?.close();
    this.#receiver = undefined;
  }
}

/** `flower`, `/flower/` → `/flower`; none → ''. */
function normalisePrefix(prefix: string | undefined): string {
  const trimmed = (prefix ?? '').replace(/^\/+|\/+$/g, '');
  return trimmed ? `/${trimmed}` : '';
}
