import type { ObservableCallback, ObservableGauge } from '@opentelemetry/api';
import { KQ_VERSION } from '../protocol/software-info';
import { metricsActive, openTelemetry } from './open-telemetry';

/** What the metrics read of a worker (kept structural: telemetry sits below the worker). */
export interface MeteredWorker {
  readonly hostname: string;
  readonly prefetchCount: number;
  readonly state: { readonly reserved: { readonly size: number }; readonly active: { readonly size: number } };
  readonly pool: { readonly limit: number };
  on(event: 'task', listener: (kind: string, request: MeteredRequest, fields: Readonly<Record<string, unknown>>) => void): unknown;
  off(event: 'task', listener: (kind: string, request: MeteredRequest, fields: Readonly<Record<string, unknown>>) => void): unknown;
}

export interface MeteredRequest {
  readonly name: string;
  readonly timeStart: number | null;
  /** When the worker received the message, epoch seconds. */
  readonly receivedAt: number;
}

/**
 * The worker's task metrics through the OpenTelemetry metrics API, for users with a collector (the same numbers
 * the worker's `/metrics` serves in Prometheus form): tasks received/succeeded/failed/retried by task name, the
 * runtime and the wait between receipt and start (prefetched, or held for an ETA) as histograms, and the prefetched,
 * active and pool-size gauges. Returns the detach function; nothing happens without `@opentelemetry/api` or without a
 * MeterProvider registered before the worker starts.
 */
export function attachTaskMetrics(worker: MeteredWorker): () => void {
  const api = openTelemetry();
  // Without a MeterProvider (registered before the worker starts) every record would be a no-op: none are made.
  if (!api || !metricsActive(api)) return () => undefined;
  const meter = api.metrics.getMeter('kq', KQ_VERSION);
  const counter = (what: string) =>
    meter.createCounter(`kq.tasks.${what}`, { description: `Tasks ${what} by this worker`, unit: '{task}' });
  const counters: Readonly<Record<string, ReturnType<typeof counter>>> = {
    received: counter('received'),
    succeeded: counter('succeeded'),
    failed: counter('failed'),
    retried: counter('retried'),
  };
  const runtime = meter.createHistogram('kq.task.runtime', { description: 'How long task functions ran', unit: 's' });
  const wait = meter.createHistogram('kq.task.wait', { description: 'From receipt by the worker to start (prefetched or held for an ETA)', unit: 's' });
  const gauge = (name: string, description: string, unit: string): ObservableGauge => meter.createObservableGauge(name, { description, unit });
  const host = { 'celery.hostname': worker.hostname };
  const reading: ReadonlyArray<readonly [ObservableGauge, ObservableCallback]> = [
    [gauge('kq.worker.prefetched', 'Tasks received and not yet started', '{task}'), (result) => result.observe(worker.state.reserved.size, host)],
    [gauge('kq.worker.active', 'Tasks running', '{task}'), (result) => result.observe(worker.state.active.size, host)],
    [gauge('kq.worker.pool.size', 'Tasks the pool runs at once', '{slot}'), (result) => result.observe(worker.pool.limit, host)],
  ];
  for (const [gauge, callback] of reading) gauge.addCallback(callback);
  const onTask = (kind: string, request: MeteredRequest, fields: Readonly<Record<string, unknown>>): void => {
    const attributes = { 'celery.task_name': request.name, ...host };
    counters[kind]?.add(1, attributes);
    if (kind === 'started' && request.timeStart !== null) wait.record(Math.max(0, request.timeStart - request.receivedAt), attributes);
    if ((kind === 'succeeded' || kind === 'failed') && typeof fields['runtime'] === 'number') runtime.record(fields['runtime'], attributes);
  };
  worker.on('task', onTask);
  return () => {
    worker.off('task', onTask);
    for (const [gauge, callback] of reading) gauge.removeCallback(callback);
  };
}
