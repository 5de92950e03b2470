import * as prom from 'prom-client';
import type { ClusterState, ClusterTask, ReceivedEvent } from '@kq/worker';

/**
 * Flower's Prometheus metrics, under Flower's names and labels, so its Grafana dashboards and alerts work as they
 * are: events by worker, type and task, task runtime histogram, prefetch time and count, worker online and number
 * of executing tasks — plus `kq_queue_length`. Fed by the same events and samples the dashboard shows.
 */
export class FlowerMetrics {
  readonly registry = new prom.Registry();
  readonly #events = new prom.Counter({ name: 'flower_events_total', help: 'Number of events', labelNames: ['worker', 'type', 'task'], registers: [this.registry] });
  readonly #runtime = new prom.Histogram({ name: 'flower_task_runtime_seconds', help: 'Task runtime', labelNames: ['worker', 'task'], registers: [this.registry] });
  readonly #prefetchTime = new prom.Gauge({
    name: 'flower_task_prefetch_time_seconds',
    help: 'The time the task spent waiting at the celery worker to be executed.',
    labelNames: ['worker', 'task'],
    registers: [this.registry],
  });
  readonly #prefetched = new prom.Gauge({
    name: 'flower_worker_prefetched_tasks',
    help: 'Number of tasks of given type prefetched at a worker',
    labelNames: ['worker', 'task'],
    registers: [this.registry],
  });
  readonly #online = new prom.Gauge({ name: 'flower_worker_online', help: 'Worker online status', labelNames: ['worker'], registers: [this.registry] });
  readonly #executing = new prom.Gauge({
    name: 'flower_worker_number_of_currently_executing_tasks',
    help: 'Number of tasks currently executing at a worker',
    labelNames: ['worker'],
    registers: [this.registry],
  });

  // Not Flower's: what its users scrape from a broker exporter, here from the lengths the dashboard samples.
  readonly #queueLength = new prom.Gauge({ name: 'kq_queue_length', help: 'Messages waiting in a queue the workers consume', labelNames: ['queue'], registers: [this.registry] });

  /** The latest queue lengths. */
  queues(lengths: Readonly<Record<string, number>>): void {
    for (const [queue, length] of Object.entries(lengths)) this.#queueLength.labels(queue).set(length);
  }

  /** Accounts for one event, once the state has applied it (as Flower's `EventsState.event`). */
  event(event: ReceivedEvent, task: ClusterTask | undefined): void {
    const worker = event.hostname;
    if (event.type.startsWith('task-')) {
      const name = (typeof event['name'] === 'string' ? event['name'] : task?.name) ?? '';
      this.#events.labels(worker, event.type, name).inc();
      const runtime = event['runtime'];
      if (typeof runtime === 'number' && runtime > 0) this.#runtime.labels(worker, name).observe(runtime);
      const eta = task?.fields['eta'];
      const received = task?.times['received'];
      const started = task?.times['started'];
      if (event.type === 'task-received' && !eta && received) this.#prefetched.labels(worker, name).inc();
      if (event.type === 'task-started' && !eta && started && received) {
        this.#prefetchTime.labels(worker, name).set(started - received);
        this.#prefetched.labels(worker, name).dec();
      }
      if ((event.type === 'task-succeeded' || event.type === 'task-failed') && !eta && started && received) this.#prefetchTime.labels(worker, name).set(0);
    } else if (event.type === 'worker-online' || event.type === 'worker-heartbeat') {
      this.#online.labels(worker).set(1);
      const active = event['active'];
      if (typeof active === 'number') this.#executing.labels(worker).set(active);
    } else if (event.type === 'worker-offline') {
      this.#online.labels(worker).set(0);
    } else {
      this.#events.labels(worker, event.type, '').inc();
    }
  }

  /** Marks workers whose heartbeats expired offline (Flower reads `worker.alive` the same way). */
  refreshOnline(state: ClusterState, now: number = Date.now() / 1000): void {
    for (const worker of state.workers.values()) this.#online.labels(worker.hostname).set(worker.isAlive(now) ? 1 : 0);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
