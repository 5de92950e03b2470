import type { Context, Span } from '@opentelemetry/api';
import { KQ_VERSION } from '../protocol/software-info';
import { openTelemetry, tracingActive, type OpenTelemetry } from './open-telemetry';
import { describeError } from '../errors/describe-error';

// Names and attributes as Python's opentelemetry-instrumentation-celery writes them, so a trace reads the same
// whichever side sent or ran a step: spans `apply_async/<task>` (PRODUCER) and `run/<task>` (CONSUMER), the context
// in the task message's own headers as W3C `traceparent`/`tracestate` (where Celery's `before_task_publish` signal
// lets the Python instrumentation put it, and where it reads it back from the request).
const TRACER_NAME = 'kq';
const ACTION = 'celery.action';
const TASK_NAME = 'celery.task_name';

/** The OpenTelemetry `messaging.system` of a broker URL. */
export function messagingSystem(brokerUrl: string): string {
  const scheme = brokerUrl.slice(0, Math.max(0, brokerUrl.indexOf(':'))).toLowerCase();
  if (scheme.startsWith('amqp')) return 'rabbitmq';
  if (scheme.startsWith('redis') || scheme === 'sentinel') return 'redis';
  if (scheme.includes('postgres')) return 'postgresql';
  return scheme || 'memory';
}

/** A send being traced: the headers carrying its context, and the end of its span. */
export interface PublishTrace {
  readonly headers: Readonly<Record<string, string>>;
  /** Once the message is built and routed: its id and where it goes. */
  sent(id: string, routingKey: string, exchange: string): void;
  end(error?: unknown): void;
}

/**
 * The options of a send with its trace context added to the message's headers: the PRODUCER span's when there is
 * one, else the running task's (`traceparent` of its run, for a pool child without an SDK); unchanged otherwise.
 */
export function withTraceHeaders<O extends { headers?: Record<string, unknown> }>(
  options: O,
  trace: PublishTrace | undefined,
  running: { readonly request: { readonly traceparent?: string | null } } | undefined,
): O {
  const headers = trace && trace.headers['traceparent'] ? trace.headers : running?.request.traceparent ? { traceparent: running.request.traceparent } : undefined;
  return headers ? { ...options, headers: { ...options.headers, ...headers } } : options;
}

function tracer(api: OpenTelemetry): ReturnType<OpenTelemetry['trace']['getTracer']> {
  return api.trace.getTracer(TRACER_NAME, KQ_VERSION);
}

/**
 * Starts the PRODUCER span of a send, a child of whatever span is active (a task's run, a web request). The broker URL
 * gives `messaging.system`, read only once tracing is known to be on.
 */
export function startPublishTrace(taskName: string, brokerUrl: string): PublishTrace | undefined {
  const api = openTelemetry();
  if (!api || !tracingActive(api)) return undefined;
  const parent = api.context.active();
  const span = tracer(api).startSpan(
    `apply_async/${taskName}`,
    {
      kind: api.SpanKind.PRODUCER,
      attributes: {
        [ACTION]: 'apply_async',
        [TASK_NAME]: taskName,
        'messaging.system': messagingSystem(brokerUrl),
        'messaging.operation.type': 'publish',
      },
    },
    parent,
  );
  const headers: Record<string, string> = {};
  api.propagation.inject(api.trace.setSpan(parent, span), headers);
  return {
    headers,
    sent: (id, routingKey, exchange) => {
      span.setAttribute('messaging.message.id', id);
      span.setAttribute('messaging.destination.name', routingKey);
      if (exchange) span.setAttribute('celery.exchange', exchange);
    },
    end: (error) => {
      if (error !== undefined) fail(api, span, error);
      span.end();
    },
  };
}

/** A task run being traced. */
export interface RunTrace {
  /** `traceparent` of the run span, for sends made where the span cannot be active (a pool child without an SDK). */
  readonly traceparent: string | null;
  /** Runs `fn` with the run span active, so what it sends and logs is part of the trace. */
  within<T>(fn: () => Promise<T>): Promise<T>;
  end(outcome: string, failure?: unknown, retryReason?: unknown): void;
}

/**
 * Starts the CONSUMER span of a run, continuing the trace the message's headers carry (sent by kq or by Python's
 * instrumentation); a message without one starts a new trace.
 */
export function startRunTrace(
  request: { readonly id: string; readonly name: string; readonly headers: Readonly<Record<string, unknown>>; readonly retries: number },
  delivery: { readonly routingKey: string },
  brokerUrl: string,
  hostname: string,
): RunTrace | undefined {
  const api = openTelemetry();
  if (!api || !tracingActive(api)) return undefined;
  const parent = api.propagation.extract(api.ROOT_CONTEXT, request.headers, HEADER_GETTER);
  const span = tracer(api).startSpan(
    `run/${request.name}`,
    {
      kind: api.SpanKind.CONSUMER,
      attributes: {
        [ACTION]: 'run',
        [TASK_NAME]: request.name,
        'messaging.system': messagingSystem(brokerUrl),
        'messaging.operation.type': 'process',
        'messaging.destination.name': delivery.routingKey,
        'messaging.message.id': request.id,
        'celery.hostname': hostname,
        'celery.retries': request.retries,
      },
    },
    parent,
  );
  const active: Context = api.trace.setSpan(parent, span);
  const context = span.spanContext();
  return {
    traceparent: api.trace.isSpanContextValid(context) ? `00-${context.traceId}-${context.spanId}-0${context.traceFlags.toString(16)}` : null,
    within: (fn) => api.context.with(active, fn),
    end: (outcome, failure, retryReason) => {
      span.setAttribute('celery.state', STATES[outcome] ?? outcome.toUpperCase());
      if (retryReason !== undefined) {
        span.setAttribute('celery.retry.reason', describeError(retryReason));
        span.addEvent('retry', { 'celery.retry.reason': describeError(retryReason) });
      }
      if (outcome === 'failed' && failure !== undefined) fail(api, span, failure);
      span.end();
    },
  };
}

/** The trace and span ids of the active span, for log lines (none without an active, valid span). */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const api = openTelemetry();
  const span = api?.trace.getActiveSpan();
  const context = span?.spanContext();
  if (!api || !context || !api.trace.isSpanContextValid(context)) return undefined;
  return { trace_id: context.traceId, span_id: context.spanId };
}

/** True when a span is active in the current context (a send then needs no fallback `traceparent`). */
export function hasActiveSpan(): boolean {
  return activeTraceIds() !== undefined;
}

const STATES: Readonly<Record<string, string>> = {
  succeeded: 'SUCCESS',
  failed: 'FAILURE',
  retried: 'RETRY',
  rejected: 'REJECTED',
  revoked: 'REVOKED',
  ignored: 'IGNORED',
};

// Header values are read as they are stored; the W3C propagator asks for `traceparent` and `tracestate`.
const HEADER_GETTER = {
  keys: (carrier: Readonly<Record<string, unknown>>): string[] => Object.keys(carrier),
  get: (carrier: Readonly<Record<string, unknown>>, key: string): string | undefined => {
    const value = carrier[key];
    return typeof value === 'string' ? value : undefined;
  },
};

function fail(api: OpenTelemetry, span: Span, error: unknown): void {
  if (error instanceof Error) span.recordException(error);
  else span.recordException(describeError(error));
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: describeError(error) });
}
