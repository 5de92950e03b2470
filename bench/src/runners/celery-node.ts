// celery.node 0.5: its client and worker, speaking Celery's protocol 2.
//
// Its client's sendTask does not return the publish (fire and forget), so enqueueing awaits the broker publish that
// sendTask makes (client.broker.publish with the message client.createTaskMessage builds) — the same work, awaited.
// Its worker acks on receipt (BRPOP on Redis, ack before running on RabbitMQ) and always stores a result: in Redis
// (its cheaper backend) for drains, on RabbitMQ itself for RabbitMQ round trips. Its AsyncResult polls the backend
// on a timer (default 500 ms); round trips poll every 1 ms on Redis and every 5 ms on RabbitMQ, where each poll is
// two RPCs (declare the result queue, basic.get) and a faster timer piles them up. It logs two lines per task with
// console.info: muted here, as every system runs without per-task logging. It has no way to stop a worker; the
// drain closes its RabbitMQ channel itself so the acks it sent reach the broker before the process exits. Its
// amqplib connections get TCP_NODELAY, as kq's do.
import { randomUUID } from 'node:crypto';
import type { Channel } from 'amqplib';
import { createClient, createWorker } from 'celery-node';
import { TASK_NAME, celeryNodeTaskId, type RunnerSpec } from '../protocol';
import { announceReady, awaitGo, CompletionTracker, cpuSince, inFlightBatches, measureRoundTrips, report, runMain, since } from './runner-kit';

console.info = () => undefined;

/** Result polling interval of round trips (ms), by broker. */
const POLL_INTERVAL_MS: Record<RunnerSpec["broker"], number> = { redis: 1, amqp: 5, postgres: 5 }; // celery.node never runs on PostgreSQL

type Client = ReturnType<typeof createClient>;

/**
 * Sets TCP_NODELAY on celery.node's amqplib connections (its conf passes these to amqplib.connect), as kq's
 * transport does: with Nagle on, its declare-then-publish pattern stalls ~40 ms per message (about 20 messages/s).
 * Must run before the broker/backend are first used (they connect lazily).
 */
function configure<T extends { conf: { CELERY_BROKER_OPTIONS: unknown; CELERY_BACKEND_OPTIONS: unknown } }>(app: T, spec: RunnerSpec): T {
  if (spec.url.startsWith('amqp')) app.conf.CELERY_BROKER_OPTIONS = { noDelay: true };
  if ((spec.backend ?? spec.url).startsWith('amqp')) app.conf.CELERY_BACKEND_OPTIONS = { noDelay: true };
  return app;
}

function publish(client: Client, spec: RunnerSpec, index: number): Promise<unknown> {
  const message = client.createTaskMessage(randomUUID(), TASK_NAME, [index], {});
  return client.broker.publish(message.body, '', spec.queue, message.headers, message.properties);
}

async function enqueue(spec: RunnerSpec, timed: boolean): Promise<void> {
  // The backend is never touched when only publishing, so it is not connected.
  const client = configure(createClient(spec.url, spec.url, spec.queue), spec);
  await client.broker.isReady();
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  if (spec.mode === 'awaited' && timed) {
    for (let index = 0; index < spec.n; index++) await publish(client, spec, index);
  } else {
    await inFlightBatches(spec.n, spec.batch, (index) => publish(client, spec, index));
  }
  const elapsedMs = since(start);
  await client.broker.disconnect();
  report({ kind: 'enqueue', elapsedMs, published: spec.n, cpuUs: cpuSince(cpuStart) });
}

function createBenchWorker(spec: RunnerSpec, onTask: (index: number) => void) {
  const worker = configure(createWorker(spec.url, spec.backend ?? spec.url, spec.queue), spec);
  worker.register(TASK_NAME, (index: number) => {
    onTask(index);
    return index;
  });
  return worker;
}

async function drain(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const tracker = new CompletionTracker(spec.n);
  const start = performance.now();
  const worker = createBenchWorker(spec, (index) => tracker.complete(index));
  void worker.start(); // resolves only when the worker stops
  await tracker.done;
  await worker.whenCurrentJobsFinished();
  const elapsedMs = since(start);
  if (spec.broker === 'amqp') {
    // Not part of its API: the AMQP broker's channel. Closing it flushes the acks written before it.
    const channel = await (worker.broker as unknown as { channel: Promise<Channel> }).channel;
    await channel.close();
  }
  report(tracker.result(elapsedMs));
}

async function serve(spec: RunnerSpec): Promise<void> {
  const worker = createBenchWorker(spec, () => undefined);
  await worker.isReady();
  void worker.start();
  announceReady();
  await new Promise(() => undefined);
}

async function roundTrip(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const client = configure(createClient(spec.url, spec.backend ?? spec.url, spec.queue), spec);
  await client.isReady();
  // Known ids, so the orchestrator can delete the queue per task that the amqp backend leaves (kept a day).
  const result = await measureRoundTrips(spec.n, (index) =>
    client.sendTask(TASK_NAME, [index], {}, celeryNodeTaskId(index)).get(30_000, POLL_INTERVAL_MS[spec.broker]),
  );
  report(result);
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
      throw new Error('this runner has no load role (the round trip under load runs kq, BullMQ and bee-queue)');
  }
});
