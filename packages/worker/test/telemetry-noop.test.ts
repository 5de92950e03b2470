// With @opentelemetry/api installed but no SDK registered, kq does no span work at all (tracing off costs nothing
// but a check); once an SDK registers a tracer provider — even after the app was made — sends and runs are traced.
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { loadOpenTelemetry } from '../src/telemetry/open-telemetry';
import { startPublishTrace, startRunTrace } from '../src/telemetry/task-tracing';

afterAll(() => trace.disable());

describe('tracing off is no work', () => {
  it('makes no span while no SDK is registered, and starts as soon as one is', async () => {
    expect(await loadOpenTelemetry()).not.toBeNull();
    const request = { id: 'x', name: 'proj.add', headers: {}, retries: 0 };
    const delivery = { routingKey: 'celery' };
    const broker = 'redis://127.0.0.1:6379/0';
    expect(startPublishTrace('proj.add', broker)).toBeUndefined();
    expect(startRunTrace(request, delivery, broker, 'w@host')).toBeUndefined();
    trace.setGlobalTracerProvider(new BasicTracerProvider());
    const publish = startPublishTrace('proj.add', broker);
    expect(publish?.headers['traceparent']).toBeUndefined(); // no propagator registered: nothing to inject
    publish?.end();
    const run = startRunTrace(request, delivery, broker, 'w@host');
    expect(run?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    run?.end('succeeded');
  });
});
