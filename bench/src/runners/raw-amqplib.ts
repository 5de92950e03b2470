// The floor on RabbitMQ: amqplib with nothing on top. Persistent messages to a durable queue on a confirm channel
// (each confirm awaited, or 1000 in flight then waitForConfirms), a consumer with prefetch 200 that acks each
// message, and a round trip as publish + reply on an exclusive reply queue. TCP_NODELAY on, as in kq's transport.
import { randomUUID } from 'node:crypto';
import { connect, type Channel, type ChannelModel, type ConfirmChannel, type Options } from 'amqplib';
import { celeryTaskBody, celeryTaskHeaders } from '../celery-task-message';
import { TASK_NAME, type RunnerSpec } from '../protocol';
import { announceReady, awaitGo, CompletionTracker, cpuSince, measureRoundTrips, report, runMain, since } from './runner-kit';

const PREFETCH = 200;

function payload(index: number): Buffer {
  return Buffer.from(JSON.stringify({ task: TASK_NAME, args: [index] }));
}

function indexOf(content: Buffer): unknown {
  const body = JSON.parse(content.toString('utf8')) as { args: unknown[] } | [unknown[], unknown, unknown];
  return Array.isArray(body) ? body[0][0] : body.args[0];
}

/**
 * A Celery protocol 2 task message as Celery (and kq) publish it: body `[args, kwargs, embed]`, the task's fields as
 * headers, correlation id and reply-to as properties. Written by hand (celery-task-message.ts): no kq code is on the raw path.
 */
function celeryMessage(index: number): { content: Buffer; options: Options.Publish } {
  const id = randomUUID();
  return {
    content: celeryTaskBody([index]),
    options: {
      persistent: true,
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      correlationId: id,
      replyTo: RAW_REPLY_TO,
      priority: 0,
      headers: celeryTaskHeaders({ id, task: TASK_NAME, argsrepr: `(${index},)`, origin: `gen${process.pid}@bench` }),
    },
  };
}

const RAW_REPLY_TO = randomUUID();

/** What the case publishes: bare JSON, or (variant `celery-message`) a Celery task message. */
function message(spec: RunnerSpec, index: number): { content: Buffer; options: Options.Publish } {
  if (spec.variant === 'celery-message') return celeryMessage(index);
  return { content: payload(index), options: { persistent: true, contentType: 'application/json' } };
}

async function open(spec: RunnerSpec): Promise<ChannelModel> {
  // TCP_NODELAY, as kq's transport sets it: amqplib leaves Nagle on by default, which stalls small writes ~40 ms.
  const connection = await connect(spec.url, { noDelay: true });
  connection.on('error', (error: Error) => process.stderr.write(`connection error: ${error.message}\n`));
  return connection;
}

function publishConfirmed(channel: ConfirmChannel, queue: string, { content, options }: { content: Buffer; options: Options.Publish }): Promise<void> {
  return new Promise((resolve, reject) => {
    channel.publish('', queue, content, options, (error) => (error ? reject(error) : resolve()));
  });
}

async function enqueue(spec: RunnerSpec, timed: boolean): Promise<void> {
  const connection = await open(spec);
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue(spec.queue, { durable: true });
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  if (spec.mode === 'awaited' && timed) {
    for (let index = 0; index < spec.n; index++) await publishConfirmed(channel, spec.queue, message(spec, index));
  } else {
    for (let at = 0; at < spec.n; at += spec.batch) {
      for (let index = at; index < Math.min(spec.n, at + spec.batch); index++) {
        const { content, options } = message(spec, index);
        channel.publish('', spec.queue, content, options);
      }
      await channel.waitForConfirms();
    }
  }
  const elapsedMs = since(start);
  await connection.close();
  report({ kind: 'enqueue', elapsedMs, published: spec.n, cpuUs: cpuSince(cpuStart) });
}

async function drain(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const tracker = new CompletionTracker(spec.n);
  const start = performance.now();
  const connection = await open(spec);
  const channel = await connection.createChannel();
  await channel.prefetch(PREFETCH);
  await channel.consume(spec.queue, (message) => {
    if (!message) return;
    tracker.complete(indexOf(message.content));
    channel.ack(message);
  });
  await tracker.done;
  const elapsedMs = since(start);
  // Closing the channel first makes its acks reach the broker before the connection goes.
  await channel.close();
  await connection.close();
  report(tracker.result(elapsedMs));
}

async function serve(spec: RunnerSpec): Promise<void> {
  const connection = await open(spec);
  const channel: Channel = await connection.createChannel();
  await channel.assertQueue(spec.queue, { durable: true });
  await channel.prefetch(PREFETCH);
  await channel.consume(spec.queue, (message) => {
    if (!message) return;
    const { replyTo, correlationId } = message.properties as { replyTo?: string; correlationId?: string };
    if (replyTo) channel.sendToQueue(replyTo, Buffer.from(JSON.stringify(indexOf(message.content))), { correlationId });
    channel.ack(message);
  });
  announceReady();
  await new Promise(() => undefined);
}

async function roundTrip(spec: RunnerSpec): Promise<void> {
  await awaitGo();
  const connection = await open(spec);
  const channel = await connection.createChannel();
  await channel.assertQueue(spec.queue, { durable: true });
  const { queue: replyQueue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
  const waiting = new Map<string, (value: unknown) => void>();
  await channel.consume(
    replyQueue,
    (message) => {
      const id = message?.properties.correlationId as string | undefined;
      const resolve = id === undefined ? undefined : waiting.get(id);
      if (message && resolve && id !== undefined) {
        waiting.delete(id);
        resolve(JSON.parse(message.content.toString('utf8')) as unknown);
      }
    },
    { noAck: true },
  );
  const result = await measureRoundTrips(spec.n, (index) => {
    const correlationId = String(index);
    const reply = new Promise<unknown>((resolve) => waiting.set(correlationId, resolve));
    channel.publish('', spec.queue, payload(index), { persistent: true, contentType: 'application/json', replyTo: replyQueue, correlationId });
    return reply;
  });
  await connection.close();
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
