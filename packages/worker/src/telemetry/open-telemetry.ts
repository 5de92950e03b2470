import { createRequire } from 'node:module';
import type * as OpenTelemetryApi from '@opentelemetry/api';

/** `@opentelemetry/api`, when the application installed it (an optional peer dependency). */
export type OpenTelemetry = typeof OpenTelemetryApi;

/**
 * Where `@opentelemetry/api` 1.x keeps what an application registers (tracer and meter providers, propagator, context
 * manager, diagnostic logger), shared by every copy of the API in the process. Absent until something is registered;
 * until then the API would answer every call with a no-op, so kq does not even load it.
 */
const API_REGISTRY = Symbol.for('opentelemetry.js.api.1');

/** The API once loaded; null when it is not installed or `KQ_OTEL=off`. */
let loaded: OpenTelemetry | null | undefined;

/**
 * The API if the application installed it and registered an SDK (or anything else) with it; null otherwise. Loaded
 * the first time this finds a registration, not at start-up: ~40 ms of a worker's start on the benchmark machine,
 * spent for nothing where no SDK is registered. Checked per call (one property read), so an SDK registered after the
 * app was made is picked up by the next send or run. Loaded with `require`, synchronously: the API is CommonJS as well,
 * and a copy other than the application's reads the same registrations.
 */
export function openTelemetry(): OpenTelemetry | null {
  if (loaded !== undefined) return loaded;
  if (!(API_REGISTRY in globalThis)) return null;
  // `KQ_OTEL=off`: as if the API were not installed (what the bench compares tracing's cost against).
  if (process.env['KQ_OTEL'] === 'off') return (loaded = null);
  try {
    loaded = createRequire(import.meta.url)('@opentelemetry/api') as OpenTelemetry;
  } catch {
    loaded = null;
  }
  return loaded;
}

let noopTracerProvider: unknown;

/**
 * Whether spans would be recorded: an SDK registered a tracer provider. Without one the API hands out no-op spans,
 * and kq skips the span work altogether (no SDK, no propagator: nothing would be exported or passed on anyway).
 * Asked of the API per call, not kept: the global provider is the registering copy's proxy, filled in when it
 * registers, and a proxy kept from before (this copy's own) would never be.
 */
export function tracingActive(api: OpenTelemetry): boolean {
  noopTracerProvider ??= new api.ProxyTracerProvider().getDelegate();
  const provider = api.trace.getTracerProvider() as { getDelegate?: () => unknown };
  return !(typeof provider.getDelegate === 'function' && provider.getDelegate() === noopTracerProvider);
}

/** Whether a meter provider was registered (the API's own is a no-op). */
export function metricsActive(api: OpenTelemetry): boolean {
  return api.metrics.getMeterProvider().constructor.name !== 'NoopMeterProvider';
}
