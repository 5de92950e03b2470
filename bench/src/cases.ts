// Every case the suite knows: workload × broker × system (× concurrency, pool or flavour).
import type { BrokerKind, EnqueueMode } from './protocol';
import { SYSTEM_NAMES, type SystemId } from './systems';

export type Workload = 'W1' | 'W2' | 'W3' | 'W4' | 'W5' | 'W6';

export const WORKLOADS: readonly Workload[] = ['W1', 'W2', 'W3', 'W4', 'W5', 'W6'];

export const WORKLOAD_TITLES: Record<Workload, string> = {
  W1: 'W1 enqueue',
  W2: 'W2 drain',
  W3: 'W3 round trip',
  W4: 'W4 scale',
  W5: 'W5 memory',
  W6: 'W6 round trip under load',
};

export interface BenchCase {
  /** Unique and stable: `redis.W2.kq.c100`. */
  key: string;
  broker: BrokerKind;
  workload: Workload;
  system: SystemId;
  /** The row's name in tables and the chart. */
  label: string;
  /** W1: awaited one by one, or bulk. */
  mode: EnqueueMode;
  /** W2/W3 worker concurrency (Python prefork: pool processes). */
  concurrency: number;
  /** W4: worker processes draining the one queue together. */
  processes: number;
  /**
   * Python Celery's pool (`solo`/`prefork`), raw Redis's drain flavour (`brpop`/`rpop-batch`), raw amqplib's
   * message shape (`celery-message`: a Celery task message instead of bare JSON).
   */
  variant: string | null;
}

/** Pool processes of the Python prefork worker: Celery's default, one per CPU (2 on the reference machine). */
export const PREFORK_PROCESSES = 2;
/** Tasks per batch in bulk publishing (pipeline size, in flight at once), and RPOP's count in the raw batch drain. */
export const BATCH = 1000;
export const RAW_POP_BATCH = 100;
/**
 * W4: how many worker processes drain one Redis together, at what concurrency each: 1, 2 and 4 processes at 100, and
 * 8 at 10 — a fleet of small workers, the same 80-400 tasks in flight spread over more processes and connections.
 */
export const SCALE_SHAPES: ReadonlyArray<{ processes: number; concurrency: number }> = [
  { processes: 1, concurrency: 100 },
  { processes: 2, concurrency: 100 },
  { processes: 4, concurrency: 100 },
  { processes: 8, concurrency: 10 },
];
/** W6: tasks a second the background producer publishes while the round trips run (well below every system's drain rate). */
export const LOAD_RATE = 5000;

function make(broker: BrokerKind, workload: Workload, system: SystemId, extra: Partial<BenchCase> & { suffix?: string; label?: string } = {}): BenchCase {
  const { suffix, label, ...rest } = extra;
  return {
    key: [broker, workload, system, suffix].filter((part) => part !== undefined).join('.'),
    broker,
    workload,
    system,
    label: label ?? SYSTEM_NAMES[system],
    mode: 'awaited',
    concurrency: 1,
    processes: 1,
    variant: null,
    ...rest,
  };
}

function enqueueCases(broker: BrokerKind, systems: readonly SystemId[], bulkLabels: Partial<Record<SystemId, string>>): BenchCase[] {
  const cases: BenchCase[] = [];
  for (const system of systems) cases.push(make(broker, 'W1', system, { suffix: 'awaited', label: `${SYSTEM_NAMES[system]}, awaited` }));
  for (const [system, how] of Object.entries(bulkLabels) as Array<[SystemId, string]>) {
    cases.push(make(broker, 'W1', system, { suffix: 'bulk', mode: 'bulk', label: `${SYSTEM_NAMES[system]}, ${how}` }));
  }
  return cases;
}

/** All cases, in report order. */
export function allCases(): BenchCase[] {
  const inFlight = `${BATCH} in flight`;
  return [
    ...enqueueCases('redis', ['kq', 'bullmq', 'bee-queue', 'celery-node', 'python-celery', 'raw-ioredis'], {
      kq: `sendTasks(${BATCH}) (an LPUSH per 250 built)`,
      bullmq: `addBulk(${BATCH})`,
      'bee-queue': `saveAll(${BATCH})`,
      'celery-node': inFlight,
      'raw-ioredis': `LPUSH pipelined ×${BATCH}`,
    }),
    // The raw LPUSH floor on the bytes kq and Celery send (a Kombu envelope of a protocol 2 message), not bare JSON.
    make('redis', 'W1', 'raw-ioredis', { suffix: 'awaited.celery', variant: 'celery-message', label: 'raw ioredis on Celery task envelopes, awaited' }),
    make('redis', 'W1', 'raw-ioredis', {
      suffix: 'bulk.celery',
      mode: 'bulk',
      variant: 'celery-message',
      label: `raw ioredis on Celery task envelopes, LPUSH pipelined ×${BATCH}`,
    }),
    make('redis', 'W2', 'kq', { suffix: 'c1', label: 'kq, concurrency 1', concurrency: 1 }),
    make('redis', 'W2', 'kq', { suffix: 'c100', label: 'kq, concurrency 100', concurrency: 100 }),
    // The same drain without @opentelemetry/api (KQ_OTEL=off) and with an SDK registered: what tracing costs off and on.
    make('redis', 'W2', 'kq', { suffix: 'c100.untraced', label: 'kq, concurrency 100, no OpenTelemetry API', concurrency: 100, variant: 'untraced' }),
    make('redis', 'W2', 'kq', { suffix: 'c100.traced', label: 'kq, concurrency 100, traced (OpenTelemetry SDK)', concurrency: 100, variant: 'traced' }),
    make('redis', 'W2', 'bullmq', { suffix: 'c1', label: 'BullMQ, concurrency 1', concurrency: 1 }),
    make('redis', 'W2', 'bullmq', { suffix: 'c100', label: 'BullMQ, concurrency 100', concurrency: 100 }),
    make('redis', 'W2', 'bee-queue', { suffix: 'c1', label: 'bee-queue, concurrency 1', concurrency: 1 }),
    make('redis', 'W2', 'bee-queue', { suffix: 'c100', label: 'bee-queue, concurrency 100', concurrency: 100 }),
    make('redis', 'W2', 'celery-node', { label: 'celery.node (acks on receipt)' }),
    make('redis', 'W2', 'python-celery', { suffix: 'solo', label: 'Python Celery, solo', variant: 'solo' }),
    make('redis', 'W2', 'python-celery', {
      suffix: 'prefork',
      label: `Python Celery, prefork ×${PREFORK_PROCESSES}`,
      variant: 'prefork',
      concurrency: PREFORK_PROCESSES,
    }),
    make('redis', 'W2', 'raw-ioredis', { suffix: 'brpop', label: 'raw ioredis, BRPOP loop', variant: 'brpop' }),
    make('redis', 'W2', 'raw-ioredis', { suffix: 'rpop-batch', label: `raw ioredis, RPOP ×${RAW_POP_BATCH} loop`, variant: 'rpop-batch' }),
    make('redis', 'W3', 'kq'),
    make('redis', 'W3', 'bullmq'),
    make('redis', 'W3', 'bee-queue'),
    make('redis', 'W3', 'celery-node', { label: 'celery.node (polls every 1 ms)' }),
    make('redis', 'W3', 'python-celery', { suffix: 'solo', label: 'Python Celery, solo', variant: 'solo' }),
    make('redis', 'W3', 'python-celery', {
      suffix: 'prefork',
      label: `Python Celery, prefork ×${PREFORK_PROCESSES}`,
      variant: 'prefork',
      concurrency: PREFORK_PROCESSES,
    }),
    make('redis', 'W3', 'raw-ioredis', { label: 'raw ioredis, LPUSH + BRPOP reply' }),
    // W4 scale: 1, 2, 4 worker processes (concurrency 100 each), and 8 at concurrency 10, on one queue — where Redis
    // becomes the limit.
    ...(['kq', 'bee-queue'] as const).flatMap((system) =>
      SCALE_SHAPES.map(({ processes, concurrency }) =>
        make('redis', 'W4', system, {
          suffix: concurrency === 100 ? `p${processes}` : `p${processes}c${concurrency}`,
          label: `${SYSTEM_NAMES[system]}, ${processes} process${processes === 1 ? '' : 'es'} × concurrency ${concurrency}`,
          concurrency,
          processes,
        }),
      ),
    ),
    // W5 memory: a started worker waiting on an empty queue, then draining what a producer publishes meanwhile.
    make('redis', 'W5', 'kq', { suffix: 'c100', label: 'kq, concurrency 100', concurrency: 100 }),
    make('redis', 'W5', 'bullmq', { suffix: 'c100', label: 'BullMQ, concurrency 100', concurrency: 100 }),
    make('redis', 'W5', 'bee-queue', { suffix: 'c100', label: 'bee-queue, concurrency 100', concurrency: 100 }),
    make('redis', 'W5', 'python-celery', { suffix: 'solo', label: 'Python Celery, solo', variant: 'solo' }),
    make('redis', 'W5', 'python-celery', {
      suffix: 'prefork',
      label: `Python Celery, prefork ×${PREFORK_PROCESSES}`,
      variant: 'prefork',
      concurrency: PREFORK_PROCESSES,
    }),
    // W6: W3's round trips while the same worker process also drains a second queue fed at LOAD_RATE.
    ...(['kq', 'bullmq', 'bee-queue'] as const).map((system) =>
      make('redis', 'W6', system, { label: `${SYSTEM_NAMES[system]}, concurrency 100, ${LOAD_RATE.toLocaleString('en-US')} tasks/s of load`, concurrency: 100 }),
    ),
    ...enqueueCases('amqp', ['kq', 'celery-node', 'raw-amqplib'], {
      kq: `sendTasks(${BATCH})`,
      'celery-node': inFlight,
      'raw-amqplib': `${inFlight}, then waitForConfirms`,
    }),
    make('amqp', 'W1', 'raw-amqplib', {
      suffix: 'awaited.celery',
      variant: 'celery-message',
      label: 'raw amqplib on Celery task messages, awaited',
    }),
    make('amqp', 'W1', 'raw-amqplib', {
      suffix: 'bulk.celery',
      mode: 'bulk',
      variant: 'celery-message',
      label: `raw amqplib on Celery task messages, ${inFlight}, then waitForConfirms`,
    }),
    make('amqp', 'W2', 'kq', { suffix: 'c1', label: 'kq, concurrency 1', concurrency: 1 }),
    make('amqp', 'W2', 'kq', { suffix: 'c100', label: 'kq, concurrency 100', concurrency: 100 }),
    make('amqp', 'W2', 'celery-node', { label: 'celery.node (acks on receipt)' }),
    make('amqp', 'W2', 'raw-amqplib', { label: 'raw amqplib, prefetch 200, ack each' }),
    // The same consumer on Celery task messages (the bytes kq and Celery send: protocol 2 headers), to show what
    // the wire format itself costs the broker and the driver, apart from what the worker does with them.
    make('amqp', 'W2', 'raw-amqplib', {
      suffix: 'celery',
      variant: 'celery-message',
      label: 'raw amqplib on Celery task messages, prefetch 200, ack each',
    }),
    make('amqp', 'W3', 'kq', { label: 'kq (rpc:// results)' }),
    make('amqp', 'W3', 'celery-node', { label: 'celery.node (polls every 5 ms)' }),
    make('amqp', 'W3', 'raw-amqplib', { label: 'raw amqplib, reply queue' }),
    // PostgreSQL: kq (Kombu's SQLAlchemy tables) next to the Node queues built on PostgreSQL alone, each in a database
    // of its own on the same server.
    ...enqueueCases('postgres', ['kq', 'pg-boss', 'graphile-worker'], {
      kq: `sendTasks(${BATCH})`,
      'pg-boss': `insert(${BATCH})`,
      'graphile-worker': `addJobs(${BATCH})`,
    }),
    ...(['kq', 'pg-boss', 'graphile-worker'] as const).flatMap((system) => [
      make('postgres', 'W2', system, { suffix: 'c1', label: `${SYSTEM_NAMES[system]}, concurrency 1`, concurrency: 1 }),
      make('postgres', 'W2', system, { suffix: 'c100', label: `${SYSTEM_NAMES[system]}, concurrency 100`, concurrency: 100 }),
    ]),
    make('postgres', 'W3', 'kq', { label: 'kq (PostgreSQL results)' }),
    make('postgres', 'W3', 'pg-boss', { label: 'pg-boss (result NOTIFYed by the handler)' }),
    make('postgres', 'W3', 'graphile-worker', { label: 'graphile-worker (result NOTIFYed by the task)' }),
    ...(['kq', 'pg-boss', 'graphile-worker'] as const).map((system) =>
      make('postgres', 'W5', system, { suffix: 'c100', label: `${SYSTEM_NAMES[system]}, concurrency 100`, concurrency: 100 }),
    ),
  ];
}

export interface CaseFilter {
  brokers: readonly BrokerKind[];
  systems: readonly SystemId[] | null;
  workloads: readonly Workload[];
}

export function selectCases(filter: CaseFilter): BenchCase[] {
  return allCases().filter(
    (c) => filter.brokers.includes(c.broker) && filter.workloads.includes(c.workload) && (filter.systems === null || filter.systems.includes(c.system)),
  );
}

/** The queue (and Redis key / BullMQ and bee-queue queue name) a case uses. */
export function queueName(c: BenchCase): string {
  return `kqbench.${c.system}`;
}
