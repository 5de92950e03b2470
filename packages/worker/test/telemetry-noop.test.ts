// With @opentelemetry/api installed but no SDK registered, kq does no span work at all (tracing off costs nothing
// but a check), and does not even load the API; once an SDK registers a tracer provider — even after the app was
// made — sends and runs are traced.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { openTelemetry } from '../src/telemetry/open-telemetry';
import { startPublishTrace, startRunTrace } from '../src/telemetry/task-tracing';

afterAll(() => trace.disable());

describe('tracing off is no work', () => {
  it('makes no span while no SDK is registered, and starts as soon as one is', async () => {
    expect(openTelemetry()).toBeNull(); // nothing registered yet (importing the API registers nothing)
    const request = { id: 'x', name: 'proj.add', headers: {}, retries: 0 };
    const delivery = { routingKey: 'celery' };
    const broker = 'redis://127.0.0.1:6379/0';
    expect(startPublishTrace('proj.add', broker)).toBeUndefined();
    expect(startRunTrace(request, delivery, broker, 'w@host')).toBeUndefined();
    trace.setGlobalTracerProvider(new BasicTracerProvider());
    expect(openTelemetry()).not.toBeNull();
    const publish = startPublishTrace('proj.add', broker);
    expect(publish?.headers['traceparent']).toBeUndefined(); // no propagator registered: nothing to inject
    publish?.end();
    const run = startRunTrace(request, delivery, broker, 'w@host');
    expect(run?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    run?.end('succeeded');
  });
});

describe('no SDK registered', () => {
  it('does not load @opentelemetry/api (~40 ms of a start) until something registers with it', async () => {
    const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/telemetry/${name}`, import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', fixture('watch-otel-loads.mjs'), '--import', 'tsx', fixture('otel-unregistered.ts')], {
      env: { ...process.env, KQ_OTEL: '' },
      timeout: 30_000,
    });
    const result = JSON.parse(stdout.trim()) as { value: number; before: number; after: number };
    expect(result.value).toBe(3);
    expect(result.before).toBe(0);
    expect(result.after).toBeGreaterThan(0); // the watch sees a load, and kq loads the API once there is a registry
  }, 40_000);
});
