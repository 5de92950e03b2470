// Tracing with the processes pool: the run's span lives in the worker process, the task's code runs in a child
// with no OpenTelemetry SDK of its own — what the child sends still continues the trace, as the run's child.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';

const appModule = fileURLToPath(new URL('./fixtures/pool/broker-app.ts', import.meta.url));
const up = await brokerReachable('redis');
const queue = `kq-tel-pool-${randomUUID().slice(0, 8)}`;
// Read by the fixture when it is imported, here and in every child (they inherit the env).
process.env['KQ_POOL_TEST_QUEUE'] = queue;
process.env['KQ_POOL_TEST_BROKER'] = `${brokerUrls.redis.replace(/\/\d*$/, '')}/11`;
process.env['KQ_POOL_TEST_BACKEND'] = `${brokerUrls.redis.replace(/\/\d*$/, '')}/11`;
const { app, tasks } = await import('./fixtures/pool/broker-app');

describe.skipIf(!up)('tracing with the processes pool on Redis', () => {
  const spans = new InMemorySpanExporter();
  let worker: Worker;

  beforeAll(async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
    worker = app.worker({ pool: 'processes', appModule, concurrency: 1, hostname: `tel-pool-${queue}@test`, logger: new Logger('test', { level: 'critical', sink: () => undefined }) });
    await worker.start();
  });

  afterAll(async () => {
    await worker?.stop();
    await app.connection.ensure((channel) => channel.deleteQueue(queue)).catch(() => undefined);
    await app.close();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it("a task a child sends runs as a child of the sending task's run", async () => {
    const childId = await (await tasks.sendsTraced.delay()).get({ timeout: 20_000 });
    const header = await app.asyncResult<string | null>(String(childId)).then((result) => result.get({ timeout: 20_000 }));
    const deadline = Date.now() + 10_000;
    while (spans.getFinishedSpans().filter((span) => span.name.startsWith('run/')).length < 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const sender = spans.getFinishedSpans().find((span) => span.name === 'run/broker.sendsTraced');
    const child = spans.getFinishedSpans().find((span) => span.name === 'run/broker.traced');
    expect(header).toBe(`00-${sender?.spanContext().traceId}-${sender?.spanContext().spanId}-01`);
    expect(child?.spanContext().traceId).toBe(sender?.spanContext().traceId);
    expect(child?.parentSpanContext?.spanId).toBe(sender?.spanContext().spanId);
  }, 40_000);
});
