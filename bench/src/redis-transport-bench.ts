// kq's RedisTransport next to raw ioredis, measured in the same run against the same Redis.
//
//   cd bench && pnpm exec tsx src/redis-transport-bench.ts [--n=20000] [--runs=3] [--url=redis://127.0.0.1:6379/0]
//
// Each case runs --runs times; the median messages/s is reported, with kq's ratio to its raw baseline:
//   publish:  kq channel.publish awaited one by one      vs  LPUSH awaited one by one
//             kq publishes in flight together (1000)     vs  LPUSH pipelined in batches of 1000
//   consume:  kq consume + ack (prefetch 1 / 100)        vs  a BRPOP loop (which neither records nor acks)
//                                                        and a Kombu-style loop (BRPOP, MULTI record, MULTI ack)
// kq does more per message than the baselines on purpose: Kombu's envelope, the unacked hash and index, and the
// lease records a crash-safe claim needs. The ratios show what that costs.
import { randomUUID } from 'node:crypto';
import { Queue, type Channel, type OutgoingMessage } from '@kq/core';
import { RedisTransport, encodeEnvelope } from '@kq/redis';
import { Redis } from 'ioredis';

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [key, value] = arg.replace(/^--/, '').split('=');
    return [key as string, value ?? 'true'];
  }),
);
const N = Number(args.get('n') ?? process.env['N'] ?? 20_000);
const RUNS = Number(args.get('runs') ?? 3);
const URL = args.get('url') ?? process.env['KQ_REDIS_URL'] ?? 'redis://127.0.0.1:6379/0';
const PREFIX = `kqbench:${randomUUID().slice(0, 8)}:`;
const BATCH = 1000;
/** Run only the cases whose name contains this (for profiling one path: node --cpu-prof). */
const ONLY = args.get('only');

// A Celery-sized task message (headers like protocol 2's, a small JSON body).
const message: OutgoingMessage = {
  body: Buffer.from('[[2, 2], {}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]'),
  contentType: 'application/json',
  contentEncoding: 'utf-8',
  headers: {
    lang: 'py',
    task: 'proj.add',
    id: '2de288c0-2ebf-495f-b311-1a1ba1cbe240',
    retries: 0,
    timelimit: [null, null],
    root_id: '2de288c0-2ebf-495f-b311-1a1ba1cbe240',
    parent_id: null,
    argsrepr: '(2, 2)',
    kwargsrepr: '{}',
    origin: 'bench@kq',
  },
  properties: { correlationId: '2de288c0-2ebf-495f-b311-1a1ba1cbe240', replyTo: 'r', deliveryMode: 2, priority: 0 },
};
// Every message needs its own delivery tag (the unacked hash is keyed by it), as every publisher makes one.
const envelopeFor = (): string => encodeEnvelope({ ...message, exchange: '', routingKey: 'q', deliveryTag: randomUUID(), redelivered: false });
const envelope = envelopeFor();

interface Result {
  name: string;
  rates: number[];
  /** Client CPU (user + system) per message, µs: steadier than msg/s on a busy machine. */
  cpu: number[];
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

async function measure(name: string, setup: () => Promise<void>, body: () => Promise<void>): Promise<Result> {
  const rates: number[] = [];
  const cpu: number[] = [];
  if (ONLY && !name.includes(ONLY)) return { name, rates, cpu };
  for (let run = 0; run < RUNS; run++) {
    await setup();
    const cpuBefore = process.cpuUsage();
    const started = process.hrtime.bigint();
    await body();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const used = process.cpuUsage(cpuBefore);
    rates.push(N / seconds);
    cpu.push((used.user + used.system) / N);
  }
  return { name, rates, cpu };
}

async function main(): Promise<void> {
  const raw = new Redis(URL);
  const rawBlocking = new Redis(URL);
  const transport = new RedisTransport(URL, { globalKeyprefix: PREFIX, pollIntervalMs: 200 });
  const channel: Channel = await transport.createChannel();
  await channel.declareQueue(new Queue('q'));
  const list = `${PREFIX}q`;
  const reset = async (): Promise<void> => {
    await raw.del(list, `${PREFIX}unacked`, `${PREFIX}unacked_index`);
  };
  const fill = async (): Promise<void> => {
    await reset();
    for (let at = 0; at < N; at += BATCH) {
      const pipeline = raw.pipeline();
      for (let i = at; i < Math.min(N, at + BATCH); i++) pipeline.lpush(list, envelopeFor());
      await pipeline.exec();
    }
  };
  const results: Result[] = [];
  console.log(`N=${N}, ${RUNS} runs per case, median shown; Redis ${URL}, node ${process.version}`);
  console.log('(CPU/msg is this process only; Redis works in its own process)\n');

  results.push(
    await measure('raw LPUSH, awaited one by one', reset, async () => {
      for (let i = 0; i < N; i++) await raw.lpush(list, envelope);
    }),
  );
  results.push(
    await measure('kq publish, awaited one by one', reset, async () => {
      for (let i = 0; i < N; i++) await channel.publish('', 'q', message);
    }),
  );
  results.push(
    await measure(`raw LPUSH, pipelined (${BATCH} per batch)`, reset, async () => {
      for (let at = 0; at < N; at += BATCH) {
        const pipeline = raw.pipeline();
        for (let i = at; i < Math.min(N, at + BATCH); i++) pipeline.lpush(list, envelope);
        await pipeline.exec();
      }
    }),
  );
  results.push(
    await measure(`kq publish, ${BATCH} in flight`, reset, async () => {
      for (let at = 0; at < N; at += BATCH) {
        const batch: Promise<void>[] = [];
        for (let i = at; i < Math.min(N, at + BATCH); i++) batch.push(channel.publish('', 'q', message));
        await Promise.all(batch);
      }
    }),
  );
  results.push(
    await measure('raw BRPOP loop (no ack)', fill, async () => {
      for (let i = 0; i < N; i++) await rawBlocking.brpop(list, 1);
    }),
  );
  // What a Python worker does per message with ack emulation
  // (docs/wire.md#acknowledgements-visibility-timeout-and-leases), hand-written on ioredis: 3 round trips.
  results.push(
    await measure('raw Kombu-style BRPOP + MULTI record + MULTI ack', fill, async () => {
      for (let i = 0; i < N; i++) {
        const popped = await rawBlocking.brpop(list, 1);
        if (!popped) continue;
        const tag = (JSON.parse(popped[1]) as { properties: { delivery_tag: string } }).properties.delivery_tag;
        await raw
          .multi()
          .zadd(`${PREFIX}unacked_index`, Date.now() / 1000, tag)
          .hset(`${PREFIX}unacked`, tag, `[${popped[1]}, "", "q"]`)
          .exec();
        await raw.multi().zrem(`${PREFIX}unacked_index`, tag).hdel(`${PREFIX}unacked`, tag).exec();
      }
    }),
  );
  for (const prefetch of [1, 100]) {
    results.push(
      await measure(`kq consume + ack, prefetch ${prefetch}`, fill, async () => {
        let acked = 0;
        let finish: () => void = () => undefined;
        const done = new Promise<void>((resolve) => (finish = resolve));
        const consumer = await channel.consume({
          queues: ['q'],
          prefetch,
          onMessage: (delivery) => {
            void delivery.ack().then(() => {
              if (++acked === N) finish();
            });
          },
        });
        await done;
        await consumer.cancel();
      }),
    );
  }

  const measured = results.filter((result) => result.rates.length > 0);
  const rate = (name: string): number => median((results.find((result) => result.name === name) as Result).rates);
  const width = Math.max(...measured.map((result) => result.name.length));
  for (const result of measured) {
    const runs = result.rates.map((value) => Math.round(value).toLocaleString('en-US')).join(' / ');
    const cpu = median(result.cpu).toFixed(1).padStart(6);
    console.log(`${result.name.padEnd(width)}  ${Math.round(median(result.rates)).toLocaleString('en-US').padStart(9)} msg/s  ${cpu} µs CPU/msg   (runs: ${runs})`);
  }
  const ratio = (kq: string, base: string): string =>
    measured.some((result) => result.name === kq) && measured.some((result) => result.name === base)
      ? `${(rate(kq) / rate(base)).toFixed(2)}×`
      : 'not measured';
  console.log('\nkq / raw:');
  console.log(`  publish, one by one:                               ${ratio('kq publish, awaited one by one', 'raw LPUSH, awaited one by one')}`);
  console.log(`  publish, batched:                                  ${ratio(`kq publish, ${BATCH} in flight`, `raw LPUSH, pipelined (${BATCH} per batch)`)}`);
  console.log(`  consume+ack, prefetch 1 vs BRPOP loop:            ${ratio('kq consume + ack, prefetch 1', 'raw BRPOP loop (no ack)')}`);
  console.log(`  consume+ack, prefetch 100 vs BRPOP loop:          ${ratio('kq consume + ack, prefetch 100', 'raw BRPOP loop (no ack)')}`);
  const kombu = 'raw Kombu-style BRPOP + MULTI record + MULTI ack';
  console.log(`  consume+ack, prefetch 1 vs Kombu-style ack loop:   ${ratio('kq consume + ack, prefetch 1', kombu)}`);
  console.log(`  consume+ack, prefetch 100 vs Kombu-style ack loop: ${ratio('kq consume + ack, prefetch 100', kombu)}`);

  await reset();
  await raw.del(`${PREFIX}_kq.queues`);
  await transport.close();
  raw.disconnect();
  rawBlocking.disconnect();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
