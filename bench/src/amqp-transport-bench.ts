// kq's AmqpTransport next to raw amqplib, measured in the same run against the same RabbitMQ.
//
//   cd bench && pnpm exec tsx src/amqp-transport-bench.ts [--n=20000] [--runs=3] [--url=amqp://guest:guest@127.0.0.1:5672] [--only=publish]
//
// Each case runs --runs times, kq and raw amqplib alternating; the median messages/s is reported with kq's ratio
// to the raw baseline:
//   publish (pipelined):  kq channel.publish, all in flight, each resolved by its confirm
//                         vs amqplib ConfirmChannel.publish with a callback per message, waiting for 'drain'
//   publish (one by one): each publish awaited before the next (confirm round trip per message), n/10 messages
//   consume + ack:        kq consume (prefetch 200) acking each delivery vs amqplib consume (prefetch 200) acking each
// Both sides send the same Celery-sized message (protocol-2 headers, small JSON body), each with its own header
// table (every task has its own id): amqplib makes the table a prototype (Object.create) of each publish's
// headers, which costs far more for a new object than for one reused every time, so a shared table would flatter
// the baseline. kq does more per message on purpose: py-amqp-compatible header tagging, return/confirm
// correlation, recovery bookkeeping, the Delivery object.
import { randomUUID } from 'node:crypto';
import { Queue, type Channel, type OutgoingMessage } from '@kq/core';
// @kq/amqp first: it installs its field-table decoder before amqplib loads (both sides then decode with it).
import { AmqpTransport } from '@kq/amqp';
import amqplib from 'amqplib';
import { celeryTaskBody, celeryTaskHeaders } from './celery-task-message';

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [key, value] = arg.replace(/^--/, '').split('=');
    return [key as string, value ?? 'true'];
  }),
);
const N = Number(args.get('n') ?? process.env['N'] ?? 20_000);
const RUNS = Number(args.get('runs') ?? 3);
const URL = args.get('url') ?? process.env['KQ_AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const ONLY = args.get('only');
const QUEUE = `kqbench.amqp.${randomUUID().slice(0, 8)}`;
const PREFETCH = 200;

// A Celery-sized task message: protocol 2's headers, a small JSON body.
const TASK_ID = '2de288c0-2ebf-495f-b311-1a1ba1cbe240';
const message: OutgoingMessage = {
  body: celeryTaskBody([2, 2]),
  contentType: 'application/json',
  contentEncoding: 'utf-8',
  headers: celeryTaskHeaders({ id: TASK_ID, task: 'proj.add', argsrepr: '(2, 2)', origin: 'bench@kq' }),
  properties: { correlationId: TASK_ID, replyTo: 'r', deliveryMode: 2, priority: 0 },
};
let sequence = 0;
/** A new header table per message, as every task has its own id. */
const freshHeaders = (): Record<string, unknown> => {
  const id = `${TASK_ID.slice(0, 24)}${(sequence++).toString(16).padStart(12, '0')}`;
  return { ...message.headers, id, root_id: id };
};
const kqMessage = (): OutgoingMessage => ({ ...message, headers: freshHeaders() });
const rawOptions = (): amqplib.Options.Publish => ({
  contentType: message.contentType,
  contentEncoding: message.contentEncoding,
  headers: freshHeaders(),
  correlationId: TASK_ID,
  replyTo: 'r',
  deliveryMode: 2,
  priority: 0,
});

interface Side {
  kq: number[];
  raw: number[];
  /** Client CPU (user + system) per message, in µs: on a small machine the client competes with the broker. */
  kqCpu: number[];
  rawCpu: number[];
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

async function timed(count: number, body: () => Promise<void>): Promise<{ rate: number; cpuPerMessage: number }> {
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await body();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  return { rate: count / seconds, cpuPerMessage: (used.user + used.system) / count };
}

async function main(): Promise<void> {
  const rawConnection = await amqplib.connect(URL);
  const rawConfirm = await rawConnection.createConfirmChannel();
  const rawAdmin = await rawConnection.createChannel();
  const transport = new AmqpTransport(URL, { connectionName: 'kq-bench' });
  const channel: Channel = await transport.createChannel();
  await channel.declareQueue(new Queue(QUEUE, { durable: false }));
  const purge = async (): Promise<void> => void (await rawAdmin.purgeQueue(QUEUE));

  /** Fills the queue with `count` messages through the raw confirm channel (not measured). */
  const fill = async (count: number): Promise<void> => {
    await purge();
    for (let sent = 0; sent < count; sent++) {
      if (!rawConfirm.publish('', QUEUE, message.body, rawOptions())) await new Promise((resolve) => rawConfirm.once('drain', resolve));
    }
    await rawConfirm.waitForConfirms();
  };

  const cases: Array<{ name: string; count: number; setup: () => Promise<void>; kq: () => Promise<void>; raw: () => Promise<void> }> = [
    {
      name: 'publish with confirms, pipelined',
      count: N,
      setup: purge,
      kq: async () => {
        const confirms: Array<Promise<void>> = [];
        for (let sent = 0; sent < N; sent++) confirms.push(channel.publish('', QUEUE, kqMessage()));
        await Promise.all(confirms);
      },
      raw: async () => {
        const confirms: Array<Promise<void>> = [];
        for (let sent = 0; sent < N; sent++) {
          let written = true;
          confirms.push(
            new Promise<void>((resolve, reject) => {
              written = rawConfirm.publish('', QUEUE, message.body, rawOptions(), (error: unknown) => (error ? reject(error) : resolve()));
            }),
          );
          // Respect backpressure the way an amqplib user must: stop writing until 'drain'.
          if (!written) await new Promise((resolve) => rawConfirm.once('drain', resolve));
        }
        await Promise.all(confirms);
      },
    },
    {
      name: 'publish with confirms, one by one',
      count: Math.max(1, Math.floor(N / 10)),
      setup: purge,
      kq: async () => {
        for (let sent = 0; sent < Math.max(1, Math.floor(N / 10)); sent++) await channel.publish('', QUEUE, kqMessage());
      },
      raw: async () => {
        for (let sent = 0; sent < Math.max(1, Math.floor(N / 10)); sent++) {
          await new Promise<void>((resolve, reject) =>
            rawConfirm.publish('', QUEUE, message.body, rawOptions(), (error: unknown) => (error ? reject(error) : resolve())),
          );
        }
      },
    },
    {
      name: `consume + ack, prefetch ${PREFETCH}`,
      count: N,
      setup: () => fill(N),
      kq: async () => {
        let acked = 0;
        let done!: () => void;
        const finished = new Promise<void>((resolve) => (done = resolve));
        const handle = await channel.consume({
          queues: [QUEUE],
          prefetch: PREFETCH,
          onMessage: (delivery) => {
            void delivery.ack();
            if (++acked === N) done();
          },
        });
        await finished;
        await handle.cancel();
      },
      raw: async () => {
        const consumerChannel = await rawConnection.createChannel();
        await consumerChannel.prefetch(PREFETCH);
        let acked = 0;
        let done!: () => void;
        const finished = new Promise<void>((resolve) => (done = resolve));
        await consumerChannel.consume(QUEUE, (received) => {
          if (!received) return;
          consumerChannel.ack(received);
          if (++acked === N) done();
        });
        await finished;
        await consumerChannel.close();
      },
    },
  ];

  const results: Array<{ name: string; kq: number; raw: number; ratio: number; kqCpuMicros: number; rawCpuMicros: number }> = [];
  for (const { name, count, setup, kq, raw } of cases) {
    if (ONLY && !name.includes(ONLY)) continue;
    const rates: Side = { kq: [], raw: [], kqCpu: [], rawCpu: [] };
    for (let run = 0; run < RUNS; run++) {
      await setup();
      const rawRun = await timed(count, raw);
      rates.raw.push(rawRun.rate);
      rates.rawCpu.push(rawRun.cpuPerMessage);
      await setup();
      const kqRun = await timed(count, kq);
      rates.kq.push(kqRun.rate);
      rates.kqCpu.push(kqRun.cpuPerMessage);
    }
    const kqRate = median(rates.kq);
    const rawRate = median(rates.raw);
    const kqCpu = median(rates.kqCpu);
    const rawCpu = median(rates.rawCpu);
    results.push({ name, kq: kqRate, raw: rawRate, ratio: kqRate / rawRate, kqCpuMicros: kqCpu, rawCpuMicros: rawCpu });
    console.log(
      `${name.padEnd(36)} kq ${Math.round(kqRate).toString().padStart(6)} msg/s  amqplib ${Math.round(rawRate)
        .toString()
        .padStart(6)} msg/s  kq/amqplib ${(kqRate / rawRate).toFixed(2)}  | client CPU µs/msg kq ${kqCpu.toFixed(1)} amqplib ${rawCpu.toFixed(1)}` +
        `  (runs kq ${rates.kq.map(Math.round).join(', ')}; amqplib ${rates.raw.map(Math.round).join(', ')})`,
    );
  }
  console.log(JSON.stringify({ bench: 'amqp-transport', n: N, runs: RUNS, prefetch: PREFETCH, results }));

  await rawAdmin.deleteQueue(QUEUE);
  await transport.close();
  await rawConnection.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
