// The floor on Redis: ioredis with nothing on top. LPUSH (awaited, or pipelined), a BRPOP loop or batched RPOPs
// (a pop is the only "ack" there is), and a round trip as LPUSH + BRPOP on a reply list. The payload is a small
// JSON task ({"task", "args"}) — or, in W1's `celery-message` rows, the Kombu envelope of a Celery task message, the
// bytes kq and Celery LPUSH per task.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { celeryRedisEnvelope } from '../celery-task-message';
import { TASK_NAME, type RunnerSpec } from '../protocol';
import { RAW_POP_BATCH } from '../cases';
import { announceReady, awaitGo, CompletionTracker, cpuSince, measureRoundTrips, report, runMain, since } from './runner-kit';

function smallPayload(index: number, reply?: string): string {
  return JSON.stringify(reply === undefined ? { task: TASK_NAME, args: [index] } : { task: TASK_NAME, args: [index], reply });
}

function indexOf(item: string): unknown {
  return (JSON.parse(item) as { args: unknown[] }).args[0];
}

async function open(spec: RunnerSpec): Promise<Redis> {
  const redis = new Redis(spec.url, { lazyConnect: true });
  await redis.connect();
  return redis;
}

async function enqueue(spec: RunnerSpec, timed: boolean): Promise<void> {
  const redis = await open(spec);
  const origin = `gen${process.pid}@bench`;
  const payload =
    spec.variant === 'celery-message'
      ? (index: number) => celeryRedisEnvelope({ id: randomUUID(), task: TASK_NAME, args: [index], queue: spec.queue, origin })
      : (index: number) => smallPayload(index);
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  if (spec.mode === 'awaited' && timed) {
    for (let index = 0; index < spec.n; index++) await redis.lpush(spec.queue, payload(index));
  } else {
    for (let at = 0; at < spec.n; at += spec.batch) {
      const pipeline = redis.pipeline();
      for (let index = at; index < Math.min(spec.n, at + spec.batch); index++) pipeline.lpush(spec.queue, payload(index));
      await pipeline.exec();
    }
  }
  const elapsedMs = since(start);
  redis.disconnect();
  report({ kind: 'enqueue', elapsedMs, published: spec.n, cpuUs: cpuSince(cpuStart) });
}

async function drain(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const tracker = new CompletionTracker(spec.n);
  const start = performance.now();
  const redis = await open(spec);
  if (spec.variant === 'rpop-batch') {
    while (tracker.distinct < spec.n) {
      const items = await redis.rpop(spec.queue, RAW_POP_BATCH);
      if (items === null) throw new Error(`the queue ran dry after ${tracker.distinct} of ${spec.n} items`);
      for (const item of items) tracker.complete(indexOf(item));
    }
  } else {
    while (tracker.distinct < spec.n) {
      const popped = await redis.brpop(spec.queue, 5);
      if (popped === null) throw new Error(`nothing arrived for 5 s after ${tracker.distinct} of ${spec.n} items`);
      tracker.complete(indexOf(popped[1]));
    }
  }
  const elapsedMs = since(start);
  redis.disconnect();
  report(tracker.result(elapsedMs));
}

async function serve(spec: RunnerSpec): Promise<void> {
  const redis = await open(spec);
  announceReady();
  for (;;) {
    const popped = await redis.brpop(spec.queue, 0);
    if (popped === null) continue;
    const task = JSON.parse(popped[1]) as { args: unknown[]; reply: string };
    await redis.lpush(task.reply, JSON.stringify(task.args[0]));
  }
}

async function roundTrip(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const redis = await open(spec);
  const blocking = await open(spec);
  const reply = `${spec.queue}.reply`;
  const result = await measureRoundTrips(spec.n, async (index) => {
    await redis.lpush(spec.queue, smallPayload(index, reply));
    const popped = await blocking.brpop(reply, 30);
    if (popped === null) throw new Error(`no reply to round trip ${index} within 30 s`);
    return JSON.parse(popped[1]) as unknown;
  });
  redis.disconnect();
  blocking.disconnect();
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
