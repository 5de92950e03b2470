// The OpenTelemetry SDK as an application sets it up: a tracer provider, async context, W3C propagation. Spans go
// to an in-memory exporter here so the example can print the trace; point a BatchSpanProcessor at an OTLP exporter
// (@opentelemetry/exporter-trace-otlp-http) to see the same trace in Jaeger or Tempo.
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

export const exporter = new InMemorySpanExporter();

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const KINDS = ['INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];

/** The finished spans of one trace as a tree, parents above children; `outside` names parents from another process. */
export function renderTrace(traceId: string, outside: Readonly<Record<string, string>> = {}): string[] {
  const spans = exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
  const byParent = new Map<string, ReadableSpan[]>();
  const ids = new Set(spans.map((span) => span.spanContext().spanId));
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId ?? '';
    const key = ids.has(parent) ? parent : '';
    byParent.set(key, [...(byParent.get(key) ?? []), span]);
  }
  const lines = [`trace ${traceId}`];
  const walk = (parent: string, indent: string): void => {
    const children = (byParent.get(parent) ?? []).sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
    children.forEach((span, index) => {
      const last = index === children.length - 1;
      const state = span.attributes['celery.state'] ? ` ${String(span.attributes['celery.state'])}` : '';
      const from = parent === '' && span.parentSpanContext ? ` ← ${outside[span.parentSpanContext.spanId] ?? `span ${span.parentSpanContext.spanId}`}` : '';
      lines.push(`${indent}${last ? '└─' : '├─'} ${span.name} (${KINDS[span.kind]})${state}${from}`);
      walk(span.spanContext().spanId, `${indent}${last ? '   ' : '│  '}`);
    });
  };
  walk('', '');
  return lines;
}
