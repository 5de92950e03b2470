import type * as OpenTelemetryApi from '@opentelemetry/api';

/** `@opentelemetry/api`, when the application installed it (an optional peer dependency). */
export type OpenTelemetry = typeof OpenTelemetryApi;

let loaded: OpenTelemetry | null | undefined;
let loading: Promise<OpenTelemetry | null> | undefined;

/**
 * Loads `@opentelemetry/api` once, if it is installed and `KQ_OTEL` is not `off`. Without it every tracing and metrics hook is a no-op that
 * costs one null check; with it and no SDK registered, the API's own no-op tracer and meter answer.
 */
export function loadOpenTelemetry(): Promise<OpenTelemetry | null> {
  if (loaded !== undefined) return Promise.resolve(loaded);
  // `KQ_OTEL=off`: as if the API were not installed (what the bench compares tracing's cost against).
  if (process.env['KQ_OTEL'] === 'off') return Promise.resolve((loaded = null));
  loading ??= import('@opentelemetry/api').then(
    (api: OpenTelemetry) => (loaded = api),
    () => (loaded = null),
  );
  return loading;
}

/** The API if `loadOpenTelemetry` found it (null before it resolved, or when it is not installed). */
export function openTelemetry(): OpenTelemetry | null {
  return loaded ?? null;
}

let noopTracerProvider: unknown;
let globalProvider: { getDelegate?: () => unknown } | undefined;

/**
 * Whether spans would be recorded: an SDK registered a tracer provider. Without one the API hands out no-op spans,
 * and kq skips the span work altogether (no SDK, no propagator: nothing would be exported or passed on anyway).
 * Checked per call — a field read on the API's global proxy, which an SDK's registration fills in — so an SDK
 * registered after the app was made is picked up.
 */
export function tracingActive(api: OpenTelemetry): boolean {
  noopTracerProvider ??= new api.ProxyTracerProvider().getDelegate();
  globalProvider ??= api.trace.getTracerProvider() as { getDelegate?: () => unknown };
  return !(typeof globalProvider.getDelegate === 'function' && globalProvider.getDelegate() === noopTracerProvider);
}

/** Whether a meter provider was registered (the API's own is a no-op). */
export function metricsActive(api: OpenTelemetry): boolean {
  return api.metrics.getMeterProvider().constructor.name !== 'NoopMeterProvider';
}
