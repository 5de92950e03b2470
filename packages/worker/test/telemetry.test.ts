/**
 * Traces, metrics and JSON logs (issue 21). With the OpenTelemetry SDK's in-memory exporter: a send → run → send
 * chain is one trace of PRODUCER and CONSUMER spans, parent to child, on memory://, Redis and RabbitMQ, the context
 * travelling in the task message's `traceparent` header; a Python Celery client's `traceparent` is continued by a kq
 * run, and what kq sends reaches a Python task's request as `traceparent` (where Python's instrumentation reads it).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { context, metrics, propagation, trace, SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { brokerReachable, brokerUrls, pythonAvailable } from '@kq/test-harness';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { jsonLogSink } from '../src/log/log-json-sink';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';
import { runPythonClient, startPythonWorker } from './fixtures/python-client';

const spans = new InMemorySpanExporter();
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const metricReader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 60_000 });

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [metricReader] }));
});
afterAll(() => {
  trace.disable();
  context.disable();
  propagation.disable();
  metrics.disable();
});
beforeEach(() => spans.reset());

const byName = (name: string): ReadableSpan => {
  const found = spans.getFinishedSpans().find((span) => span.name === name);
  if (!found) throw new Error(`no span ${name}; have ${spans.getFinishedSpans().map((span) => span.name).join(', ')}`);
  return found;
};
const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

async function waitFor(what: string, predicate: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function chainApp(name: string, broker: string, backend: string | null, queue: string): App {
  const app = new App(name, { broker, backend, taskDefaultQueue: queue, controlExchange: `${queue}.ctl` });
  const second = app.task('tel.second', (ctx) => ctx.request.headers['traceparent'] ?? null);
  app.task('tel.first', async (ctx, n: number) => {
    ctx.log.info(`first got ${n}`);
    await second.delay();
    return n;
  });
  return app;
}

const setups = [
  { label: 'memory://', broker: `memory://tel-${randomUUID().slice(0, 6)}`, backend: null, up: true },
  { label: 'Redis', broker: `${brokerUrls.redis}/9`, backend: `${brokerUrls.redis}/9`, up: await brokerReachable('redis') },
  { label: 'RabbitMQ', broker: brokerUrls.amqp, backend: 'rpc://', up: await brokerReachable('amqp') },
] as const;

describe.each(setups)('a send → run → send chain is one trace on $label', ({ broker, backend, up }) => {
  const queue = `kqtel.${randomUUID().slice(0, 8)}`;
  let app: App;
  let worker: Worker;
  beforeAll(async () => {
    if (!up) return;
    app = chainApp('tel', broker, backend, queue);
    worker = app.worker({ queues: [queue], cluster: false, loglevel: 'error' });
    await worker.start();
  });
  afterAll(async () => {
    if (!up) return;
    await worker.stop();
    await app.connection.ensure((channel) => channel.deleteQueue(queue)).catch(() => undefined);
    await app.close();
  });

  it.skipIf(!up)('request → apply_async/tel.first → run/tel.first → apply_async/tel.second → run/tel.second', async () => {
    const tracer = trace.getTracer('test');
    await tracer.startActiveSpan('web request', async (request: Span) => {
      await app.sendTask('tel.first', [7]);
      request.end();
    });
    await waitFor('the second task to run', () => spans.getFinishedSpans().some((span) => span.name === 'run/tel.second'));
    const root = byName('web request');
    const sendFirst = byName('apply_async/tel.first');
    const runFirst = byName('run/tel.first');
    const sendSecond = byName('apply_async/tel.second');
    const runSecond = byName('run/tel.second');
    for (const span of [sendFirst, runFirst, sendSecond, runSecond]) expect(span.spanContext().traceId).toBe(root.spanContext().traceId);
    expect(parentOf(sendFirst)).toBe(root.spanContext().spanId);
    expect(parentOf(runFirst)).toBe(sendFirst.spanContext().spanId);
    expect(parentOf(sendSecond)).toBe(runFirst.spanContext().spanId);
    expect(parentOf(runSecond)).toBe(sendSecond.spanContext().spanId);
    expect([sendFirst.kind, runFirst.kind]).toEqual([SpanKind.PRODUCER, SpanKind.CONSUMER]);
    expect(sendFirst.attributes).toMatchObject({ 'celery.action': 'apply_async', 'celery.task_name': 'tel.first', 'messaging.destination.name': queue });
    expect(runFirst.attributes).toMatchObject({ 'celery.action': 'run', 'celery.task_name': 'tel.first', 'celery.state': 'SUCCESS', 'messaging.destination.name': queue });
    expect(runFirst.attributes['messaging.message.id']).toBe(sendFirst.attributes['messaging.message.id']);
  });
});

describe('failures, retries and metrics (memory://)', () => {
  const broker = `memory://tel-fail-${randomUUID().slice(0, 6)}`;
  let app: App;
  let worker: Worker;
  let attempts = 0;
  beforeAll(async () => {
    app = new App('tel-fail', { broker, backend: 'memory://' });
    app.task('tel.boom', () => {
      throw new RangeError('no such page');
    });
    app.task('tel.flaky', (ctx) => {
      attempts++;
      if (attempts === 1) return ctx.retry({ countdown: 0, exc: new Error('try again') });
      return 'ok';
    });
    app.task('tel.ok', () => 'fine');
    worker = app.worker({ cluster: false, loglevel: 'critical' });
    await worker.start();
  });
  afterAll(async () => {
    await worker.stop();
    await app.close();
  });

  it('a failure is an ERROR span with the exception; a retry says why and its next run is a child of the first', async () => {
    const failed = await app.sendTask('tel.boom');
    await failed.get({ timeout: 5000, propagate: false });
    await waitFor('the failed run span', () => spans.getFinishedSpans().some((span) => span.name === 'run/tel.boom'));
    const boom = byName('run/tel.boom');
    expect(boom.status.code).toBe(SpanStatusCode.ERROR);
    expect(boom.attributes['celery.state']).toBe('FAILURE');
    expect(boom.events.map((event) => event.name)).toContain('exception');

    expect(await (await app.sendTask('tel.flaky')).get({ timeout: 5000 })).toBe('ok');
    await waitFor('both runs of the flaky task', () => spans.getFinishedSpans().filter((span) => span.name === 'run/tel.flaky').length === 2);
    const [first, second] = spans.getFinishedSpans().filter((span) => span.name === 'run/tel.flaky');
    expect(first?.attributes['celery.state']).toBe('RETRY');
    expect(first?.attributes['celery.retry.reason']).toContain('try again');
    // the retry is sent from inside the first run: its PRODUCER span is the first run's child, the second run its child
    const resend = spans.getFinishedSpans().find((span) => span.name === 'apply_async/tel.flaky' && parentOf(span) === first?.spanContext().spanId);
    expect(resend).toBeDefined();
    expect(parentOf(second!)).toBe(resend?.spanContext().spanId);
  });

  it('counts tasks and records runtimes through the OpenTelemetry metrics API', async () => {
    await (await app.sendTask('tel.ok')).get({ timeout: 5000 });
    await metricReader.forceFlush();
    const exported = metricExporter.getMetrics().flatMap((resource) => resource.scopeMetrics).filter((scope) => scope.scope.name === 'kq');
    const names = new Set(exported.flatMap((scope) => scope.metrics.map((metric) => metric.descriptor.name)));
    for (const name of ['kq.tasks.received', 'kq.tasks.succeeded', 'kq.tasks.failed', 'kq.tasks.retried', 'kq.task.runtime', 'kq.task.wait', 'kq.worker.pool.size']) {
      expect(names, name).toContain(name);
    }
    const succeeded = exported.flatMap((scope) => scope.metrics).find((metric) => metric.descriptor.name === 'kq.tasks.succeeded');
    const ok = succeeded?.dataPoints.find((point) => point.attributes['celery.task_name'] === 'tel.ok');
    expect(ok?.value).toBe(1);
  });
});

describe('KQ_OTEL=off', () => {
  it('makes no span even with an SDK registered, as if @opentelemetry/api were not installed', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const script = fileURLToPath(new URL('./fixtures/telemetry/otel-off.ts', import.meta.url));
    const run = (env: Record<string, string>) => promisify(execFile)(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, ...env }, timeout: 30_000 });
    const off = JSON.parse((await run({ KQ_OTEL: 'off' })).stdout.trim()) as { value: number; spans: number };
    const on = JSON.parse((await run({})).stdout.trim()) as { value: number; spans: number };
    expect(off).toEqual({ value: 3, spans: 0 });
    expect(on.value).toBe(3);
    expect(on.spans).toBeGreaterThanOrEqual(2); // the send and the run
  }, 40_000);
});

describe('JSON logs', () => {
  it('one object per line with the task id and name and, while the task runs, the trace and span ids', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kq-json-log-'));
    const file = join(dir, 'worker.log');
    const app = chainApp('tel-log', `memory://tel-log-${randomUUID().slice(0, 6)}`, null, 'celery');
    const sink = jsonLogSink({ destination: file });
    const worker = app.worker({ cluster: false, logger: new Logger('w@test', { level: 'info', sink }) });
    await worker.start();
    await app.sendTask('tel.first', [3]);
    await waitFor('the second run', () => spans.getFinishedSpans().some((span) => span.name === 'run/tel.second'));
    await worker.stop();
    await app.close();
    await sink.close();
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const runFirst = byName('run/tel.first');
    const received = lines.find((line) => line['message'] === `Task tel.first[${runFirst.attributes['messaging.message.id']}] received`);
    expect(received).toMatchObject({ level: 'info', logger: 'w@test', task_name: 'tel.first', task_id: runFirst.attributes['messaging.message.id'] });
    const fromTask = lines.find((line) => line['message'] === 'first got 3');
    expect(fromTask).toMatchObject({ logger: 'tel.first', task_name: 'tel.first', trace_id: runFirst.spanContext().traceId, span_id: runFirst.spanContext().spanId });
    expect(typeof fromTask?.['time']).toBe('string');
    const succeeded = lines.find((line) => String(line['message']).startsWith('Task tel.first[') && String(line['message']).includes('succeeded'));
    expect(succeeded).toMatchObject({ task_name: 'tel.first', trace_id: runFirst.spanContext().traceId });
  });
});

const python = await pythonAvailable(['celery']);
const redisUp = await brokerReachable('redis');
describe.skipIf(!python || !redisUp)('across languages with Python Celery 5.2.6 on Redis', () => {
  const ns = `kqtelpy${randomUUID().slice(0, 8)}`;
  const REDIS = `${brokerUrls.redis}/9`;
  const kqQueue = `${ns}.kq`;
  const pyQueue = `${ns}.py`;
  const env = { KQ_INTEROP_BROKER: REDIS, KQ_INTEROP_BACKEND: REDIS, KQ_INTEROP_PY_QUEUE: pyQueue, KQ_INTEROP_NAMESPACE: ns };
  let app: App;
  let worker: Worker;
  beforeAll(async () => {
    app = new App('tel-py', { broker: REDIS, backend: REDIS, taskDefaultQueue: kqQueue, controlExchange: ns });
    app.task('interop.kq_traced', (ctx) => ctx.request.id);
    worker = app.worker({ queues: [kqQueue], cluster: false, loglevel: 'error' });
    await worker.start();
  });
  afterAll(async () => {
    await worker.stop();
    await app.close();
  });

  it("a kq run continues the trace of a Python producer's traceparent header", async () => {
    const traceId = randomUUID().replace(/-/g, '');
    const parentSpan = randomUUID().replace(/-/g, '').slice(0, 16);
    // What opentelemetry-instrumentation-celery's before_task_publish puts in the message: a top-level header.
    const outcome = await runPythonClient('celery_client.py', { name: 'interop.kq_traced', options: { queue: kqQueue, headers: { traceparent: `00-${traceId}-${parentSpan}-01` } } }, env);
    expect(outcome.status).toBe('SUCCESS');
    await waitFor('the kq run span', () => spans.getFinishedSpans().some((span) => span.name === 'run/interop.kq_traced'));
    const run = byName('run/interop.kq_traced');
    expect(run.spanContext().traceId).toBe(traceId);
    expect(parentOf(run)).toBe(parentSpan);
  }, 40_000);

  it("what kq sends reaches a Python task's request as traceparent: the PRODUCER span's context", async () => {
    const python = startPythonWorker(`py@${ns}`, env);
    try {
      const result = await trace.getTracer('test').startActiveSpan('kq caller', async (span: Span) => {
        const sent = await app.sendTask<string | null>('interop.py_request_header', ['traceparent'], {}, { queue: pyQueue });
        span.end();
        return sent.get({ timeout: 30_000 });
      });
      const send = byName('apply_async/interop.py_request_header');
      expect(result).toBe(`00-${send.spanContext().traceId}-${send.spanContext().spanId}-01`);
    } finally {
      python.kill('SIGKILL');
    }
  }, 45_000);
});
