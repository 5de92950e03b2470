import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { HeldTask } from './held-task';
import type { WorkerHost } from './worker-host';

export interface HttpEndpointOptions {
  /** Port to listen on; 0 picks a free one (see `port` once started). */
  port: number;
  /** Address to bind. Default 127.0.0.1: probes and scrapers reach it locally or through what you put in front. */
  host?: string;
}

interface WorkerMetrics {
  registry: Registry;
  tasks: Counter<'task' | 'state'>;
  runtime: Histogram<'task'>;
  active: Gauge;
  reserved: Gauge;
  prefetch: Gauge;
  poolSize: Gauge;
  ready: Gauge;
}

/**
 * A worker's own HTTP endpoint (`kq worker --http-port`): `/healthz` (the process answers), `/readyz` (connected
 * and consuming — a worker that lost its consumer while connected is not ready), `/metrics` (Prometheus text, from
 * prom-client). node:http is enough for three GET routes; prom-client is loaded only when the endpoint starts.
 */
export class WorkerHttpEndpoint {
  readonly #worker: WorkerHost;
  readonly #options: HttpEndpointOptions;
  #server: Server | undefined;
  #metrics: WorkerMetrics | undefined;
  #onTask: ((kind: string, request: HeldTask, fields: Readonly<Record<string, unknown>>) => void) | undefined;

  constructor(worker: WorkerHost, options: HttpEndpointOptions) {
    this.#worker = worker;
    this.#options = options;
  }

  /** The port listened on (after `start`). */
  get port(): number {
    return (this.#server?.address() as AddressInfo | null)?.port ?? this.#options.port;
  }

  async start(): Promise<void> {
    this.#metrics = await createMetrics();
    const metrics = this.#metrics;
    this.#onTask = (kind, request, fields) => {
      metrics.tasks.inc({ task: request.name, state: kind });
      if (kind === 'succeeded' || kind === 'failed') {
        const runtime = typeof fields['runtime'] === 'number' ? fields['runtime'] : request.timeStart === null ? undefined : Date.now() / 1000 - request.timeStart;
        if (runtime !== undefined) metrics.runtime.observe({ task: request.name }, runtime);
      }
    };
    this.#worker.on('task', this.#onTask);
    // node:http is loaded by a worker that serves its endpoint, not by every one.
    const { createServer } = await import('node:http');
    const server = createServer((request, response) => void this.#handle(request, response));
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#options.port, this.#options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.#worker.log.info(`http endpoint on http://${this.#options.host ?? '127.0.0.1'}:${this.port} (/healthz, /readyz, /metrics)`);
  }

  async close(): Promise<void> {
    if (this.#onTask) this.#worker.off('task', this.#onTask);
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, { error: 'only GET' });
    if (path === '/healthz') return send(response, 200, { status: 'ok', hostname: this.#worker.hostname });
    if (path === '/readyz') {
      const connected = this.#worker.app.connection.isConnected;
      const consuming = this.#worker.isConsuming;
      const ready = connected && consuming;
      return send(response, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', connected, consuming });
    }
    if (path === '/metrics' && this.#metrics) {
      const metrics = this.#metrics;
      const worker = this.#worker;
      metrics.active.set(worker.state.active.size);
      metrics.reserved.set(worker.state.reserved.size);
      metrics.prefetch.set(worker.prefetchCount);
      metrics.poolSize.set(worker.pool.limit);
      metrics.ready.set(worker.app.connection.isConnected && worker.isConsuming ? 1 : 0);
      response.writeHead(200, { 'content-type': metrics.registry.contentType });
      response.end(await metrics.registry.metrics());
      return;
    }
    send(response, 404, { error: `no ${path}: try /healthz, /readyz or /metrics` });
  }
}

function send(response: ServerResponse, status: number, body: Record<string, unknown>): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

async function createMetrics(): Promise<WorkerMetrics> {
  const prom = await import('prom-client');
  const registry = new prom.Registry();
  return {
    registry,
    tasks: new prom.Counter({ name: 'kq_worker_tasks_total', help: 'Task events of this worker, by task name and state', labelNames: ['task', 'state'], registers: [registry] }),
    runtime: new prom.Histogram({
      name: 'kq_task_runtime_seconds',
      help: 'How long tasks ran, by task name',
      labelNames: ['task'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    active: new prom.Gauge({ name: 'kq_worker_active_tasks', help: 'Tasks running now', registers: [registry] }),
    reserved: new prom.Gauge({ name: 'kq_worker_reserved_tasks', help: 'Tasks received and not finished (running, waiting for a slot, or held for their ETA)', registers: [registry] }),
    prefetch: new prom.Gauge({ name: 'kq_worker_prefetch_count', help: 'The consumer prefetch (QoS) now', registers: [registry] }),
    poolSize: new prom.Gauge({ name: 'kq_worker_pool_size', help: 'Slots (or children) of the pool now', registers: [registry] }),
    ready: new prom.Gauge({ name: 'kq_worker_ready', help: '1 when connected and consuming, else 0', registers: [registry] }),
  };
}
