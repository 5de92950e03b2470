// kq (@kq/worker on @kq/redis or @kq/amqp), used the way an application uses it: App, sendTask, app.worker().
//
// Tasks are sent by name with `app.sendTask` (what `task.delay` does), in bulk with `app.sendTasks` (what
// `task.applyMany` does). Workers ack late (after the task ran and its result, if any, was stored), log at warning
// level (no line per task), and keep kq's other defaults (prefetch = concurrency × 4, remote control on).
import { App } from '@kq/worker';
import { TASK_NAME, type RunnerSpec } from '../protocol';
import { announceReady, awaitGo, CompletionTracker, cpuSince, drainDone, measureRoundTrips, publishSteadily, report, runMain, since } from './runner-kit';

function createApp(spec: RunnerSpec, backend: string | null): App {
  return new App('kqbench', {
    broker: spec.url,
    backend,
    taskDefaultQueue: spec.queue,
    taskAcksLate: true,
  });
}

/**
 * Loads the transport package the URL will pick before the clock starts: the app loads it on first connect, and
 * under tsx that load (compiling TypeScript) would otherwise be timed as part of the drain.
 */
async function preloadTransport(spec: RunnerSpec): Promise<void> {
  await (spec.broker === 'redis' ? import('@kq/redis') : spec.broker === 'amqp' ? import('@kq/amqp') : import('@kq/postgres'));
}

function createWorker(app: App, spec: RunnerSpec) {
  app.task(TASK_NAME, (_ctx, index: number) => index);
  // Under load: one worker on both queues, the round trips' and the one a `load` runner keeps busy.
  const queues = spec.loadQueue ? { queues: [spec.queue, spec.loadQueue] } : {};
  return app.worker({ concurrency: spec.concurrency, hostname: `kqbench-${process.pid}@%h`, loglevel: 'warning', ...queues });
}

async function enqueue(spec: RunnerSpec, timed: boolean): Promise<void> {
  const app = createApp(spec, null);
  await app.connection.connect();
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  if (spec.mode === 'awaited' && timed) {
    for (let index = 0; index < spec.n; index++) await app.sendTask(TASK_NAME, [index]);
  } else {
    // The bulk way: `sendTasks` builds each message as sendTask does and publishes a batch at once.
    for (let at = 0; at < spec.n; at += spec.batch) {
      const calls = [];
      for (let index = at; index < Math.min(spec.n, at + spec.batch); index++) calls.push({ name: TASK_NAME, args: [index] });
      await app.sendTasks(calls);
    }
  }
  const elapsedMs = since(start);
  await app.close();
  report({ kind: 'enqueue', elapsedMs, published: spec.n, cpuUs: cpuSince(cpuStart) });
}

/**
 * The `traced` flavour: an OpenTelemetry SDK registered as an application would (async context, W3C propagation,
 * spans batched to an exporter that drops them), so every send and run makes real spans — the cost of tracing on.
 */
async function registerTracing(): Promise<void> {
  const [{ context, propagation, trace }, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { BasicTracerProvider, BatchSpanProcessor }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace-base'),
  ]);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const drop = { export: (_spans: unknown[], done: (result: { code: number }) => void) => done({ code: 0 }), shutdown: async () => undefined };
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(drop)] }));
}

async function drain(spec: RunnerSpec): Promise<void> {
  await preloadTransport(spec);
  if (spec.variant === 'traced') await registerTracing();
  // `untraced`: as if @opentelemetry/api were not installed — the baseline the other two kq drains are compared with.
  if (spec.variant === 'untraced') process.env['KQ_OTEL'] = 'off';
  // The App loads the optional codecs (bzip2's compressjs) from its constructor, in the background, and the
  // OpenTelemetry API there when an SDK is registered (the `traced` flavour): loaded before the clock starts too, as
  // the transport is above and as the other systems' modules are by their imports (50–150 ms of CPU on this machine,
  // up to 7 µs of a 20,000-task drain's figure). The App makes no connection until the worker starts.
  const app = createApp(spec, null);
  await app.codecsReady();
  await awaitGo();
  const worker = createWorker(app, spec);
  const tracker = new CompletionTracker(spec.n);
  worker.on('task', (kind, request) => {
    if (kind === 'succeeded') tracker.complete(request.message.args[0]);
  });
  const start = performance.now();
  await worker.start();
  await drainDone(spec, tracker);
  // Acks land after 'succeeded'; the pool is drained once every job, ack included, has finished.
  await worker.pool.drained();
  const elapsedMs = since(start);
  await worker.stop();
  await app.close();
  report(tracker.result(elapsedMs, spec.shared));
}

async function serve(spec: RunnerSpec): Promise<void> {
  const app = createApp(spec, spec.backend);
  const worker = createWorker(app, spec);
  await worker.start();
  announceReady();
  await new Promise(() => undefined); // until the orchestrator stops us
}

async function roundTrip(spec: RunnerSpec): Promise<void> {
  await preloadTransport(spec);
  await awaitGo();
  const app = createApp(spec, spec.backend);
  await app.connection.connect();
  await app.backend();
  const result = await measureRoundTrips(spec.n, async (index) => (await app.sendTask<number>(TASK_NAME, [index])).get({ timeout: 30_000 }));
  await app.close();
  report(result);
}

async function load(spec: RunnerSpec): Promise<void> {
  const app = createApp(spec, null);
  await app.connection.connect();
  const queue = spec.loadQueue ?? spec.queue;
  await publishSteadily(spec.ratePerSecond ?? 1000, spec.n, (indexes) => app.sendTasks(indexes.map((index) => ({ name: TASK_NAME, args: [index], options: { queue, ignoreResult: true } }))));
}

runMain(async (spec) => {
  switch (spec.role) {
    case 'enqueue':
      return enqueue(spec, true);
    case 'fill':
      return enqueue(spec, false);
    case 'drain':
      return drain(spec);
    case 'serve':
      return serve(spec);
    case 'roundtrip':
      return roundTrip(spec);
    case 'load':
      return load(spec);
  }
});
