// One trace across processes: a producer sends `shop.checkout`, a kq worker runs it, and the task sends
// `shop.receipt`, which runs too — spans `apply_async/<task>` and `run/<task>` linked parent to child through the
// task messages' `traceparent` header, as Python's opentelemetry-instrumentation-celery links them.
//
//   pnpm --filter @kq/example-telemetry start                          # Node producer, memory:// broker
//   pnpm --filter @kq/example-telemetry start -- --broker redis://127.0.0.1:6379/0 --python
//                                                                      # the producer is Python Celery (Redis only)
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { trace } from '@opentelemetry/api';
import { exporter, renderTrace } from './tracing';
import { App } from '@kq/worker';

const argv = process.argv.slice(2).filter((arg, index) => !(index === 0 && arg === '--'));
const { values } = parseArgs({ args: argv, options: { broker: { type: 'string' }, python: { type: 'boolean' } } });
const broker = values.broker ?? 'memory://telemetry';
const queue = `telemetry-${process.pid}`;

const app = new App('shop', { broker, backend: broker.startsWith('redis') ? broker : 'memory://telemetry', taskDefaultQueue: queue });
const receipt = app.task('shop.receipt', (ctx, order: string) => {
  ctx.log.info(`receipt for ${order}`);
  return `receipt-${order}`;
});
app.task('shop.checkout', async (_ctx, order: string) => {
  await receipt.delay(order);
  return `paid ${order}`;
});

const worker = app.worker({ queues: [queue], cluster: false, loglevel: 'warning' });
await worker.start();

let traceId: string;
const outside: Record<string, string> = {};
if (values.python) {
  if (!broker.startsWith('redis')) throw new Error('--python needs --broker redis://… (the Python producer reaches the worker through it)');
  // Python Celery sends the task with the `traceparent` its OpenTelemetry instrumentation would put in the message:
  // a trace the Python side started (its request span), which the kq worker continues.
  traceId = randomBytes(16).toString('hex');
  const pythonSpan = randomBytes(8).toString('hex');
  outside[pythonSpan] = 'a Python request span';
  const script = fileURLToPath(new URL('../python/producer.py', import.meta.url));
  const sent = spawnSync('/usr/bin/python3', [script, broker, queue, `00-${traceId}-${pythonSpan}-01`], { encoding: 'utf8' });
  if (sent.status !== 0) throw new Error(`the Python producer failed: ${sent.stderr}`);
  console.log(`Python Celery sent shop.checkout: ${sent.stdout.trim()}`);
} else {
  traceId = await trace.getTracer('example').startActiveSpan('POST /checkout', async (span) => {
    await app.sendTask('shop.checkout', ['order-7']);
    span.end();
    return span.spanContext().traceId;
  });
}

const deadline = Date.now() + 20_000;
while (!exporter.getFinishedSpans().some((span) => span.name === 'run/shop.receipt') && Date.now() < deadline) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
console.log(renderTrace(traceId, outside).join('\n'));
await worker.stop();
await app.close();
