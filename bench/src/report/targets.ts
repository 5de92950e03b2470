// The goals issue #22 sets, as ratios read from one run's outcomes. They are reported, never asserted. Where one is
// not met, `why` names the physical cost in the way, from what the same run measured: worker CPU per task, Redis's
// command time per task command by command (INFO commandstats), bytes per task in the broker.
import type { BrokerKind } from '../protocol';
import type { Workload } from '../cases';
import { figures, type CaseFigures, type CaseOutcome } from '../outcome';
import type { SystemId } from '../systems';

export interface TargetCheck {
  goal: string;
  /** "kq, concurrency 100 41,200/s vs bee-queue, concurrency 100 18,900/s: **2.18×**" */
  measured: string;
  /** null: a case it needs was not run or failed. */
  met: boolean | null;
  /** When not met: what stands in the way, in measured costs. */
  why?: string;
}

type Rate = Extract<CaseFigures, { kind: 'rate' }>;
type Latency = Extract<CaseFigures, { kind: 'latency' }>;
type Commands = NonNullable<Rate['redisCommands']>;

interface Found<F> {
  label: string;
  f: F;
}

type Match = (o: CaseOutcome) => boolean;

function find(outcomes: readonly CaseOutcome[], broker: BrokerKind, workload: Workload, match: Match): Found<CaseFigures> | null {
  for (const outcome of outcomes) {
    const c = outcome.case;
    if (c.broker !== broker || c.workload !== workload || !match(outcome)) continue;
    const f = figures(outcome);
    if (f) return { label: c.label, f };
  }
  return null;
}

function rateOf(outcomes: readonly CaseOutcome[], broker: BrokerKind, workload: Workload, match: Match): Found<Rate> | null {
  const found = find(outcomes, broker, workload, match);
  return found && found.f.kind === 'rate' ? { label: found.label, f: found.f } : null;
}

function latencyOf(outcomes: readonly CaseOutcome[], broker: BrokerKind, match: Match): Found<Latency> | null {
  const found = find(outcomes, broker, 'W3', match);
  return found && found.f.kind === 'latency' ? { label: found.label, f: found.f } : null;
}

const system = (id: SystemId, more: Match = () => true): Match => (o) => o.case.system === id && more(o);
const mode = (m: 'awaited' | 'bulk'): Match => (o) => o.case.mode === m;
const variant = (v: string | null): Match => (o) => o.case.variant === v;
const concurrency = (n: number): Match => (o) => o.case.concurrency === n;
const all = (...tests: Match[]): Match => (o) => tests.every((test) => test(o));

function formatRate(value: number): string {
  return `${Math.round(value).toLocaleString('en-US')}/s`;
}

function micros(value: number | undefined | null): string {
  return value === undefined || value === null ? '?' : value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

/**
 * "evalsha 7.9 µs × 1/34, lpush 1.2 µs × 1.00": the commands that cost Redis most per task — µs per task, and calls
 * per task (a call shared by many tasks, as a batched claim or a bulk LPUSH, as one in how many).
 */
export function commandMix(commands: Commands | null, top = 3): string {
  if (!commands) return 'not measured';
  const rows = Object.entries(commands)
    .filter(([, stat]) => stat.usec > 0.05)
    .sort((a, b) => b[1].usec - a[1].usec)
    .slice(0, top);
  const calls = (perTask: number): string => (perTask >= 0.1 || perTask <= 0 ? perTask.toFixed(2) : `1/${Math.round(1 / perTask)}`);
  return rows.length === 0 ? 'nothing' : rows.map(([command, stat]) => `${command} ${stat.usec.toFixed(1)} µs × ${calls(stat.calls)}`).join(', ');
}

function redisTotal(commands: Commands | null): number | null {
  return commands ? Object.values(commands).reduce((sum, stat) => sum + stat.usec, 0) : null;
}

function ratioCheck(goal: string, kq: Found<Rate> | null, other: Found<Rate> | null, atLeast: number, why: (kq: Found<Rate>, other: Found<Rate>) => string): TargetCheck {
  if (!kq || !other) return { goal, measured: `not measured (${!kq ? 'kq' : 'the other'} case missing or failed)`, met: null };
  const ratio = kq.f.rate.median / other.f.rate.median;
  const met = ratio >= atLeast;
  return {
    goal,
    measured: `${kq.label} ${formatRate(kq.f.rate.median)} vs ${other.label} ${formatRate(other.f.rate.median)}: **${ratio.toFixed(2)}×**`,
    met,
    ...(met ? {} : { why: why(kq, other) }),
  };
}

/**
 * A drain on one core is bounded by the worker's CPU per task: 1 s / (µs per task). Says what kq and the peer
 * spend, what a ratio of `atLeast` would need, and what Redis does per task for each (and each one's bytes).
 */
function drainWhy(atLeast: number, bytes: { kq: number | null; other: number | null }) {
  return (kq: Found<Rate>, other: Found<Rate>): string => {
    const kqCpu = kq.f.workerCpuUs?.median;
    const otherCpu = other.f.workerCpuUs?.median;
    const parts = [
      `worker CPU per task: kq ${micros(kqCpu)} µs, ${other.label} ${micros(otherCpu)} µs` +
        (kqCpu && otherCpu ? ` — one Node process drains at most ~${formatRate(1e6 / kqCpu)}; ${atLeast}× would need ≤ ${(otherCpu / atLeast).toFixed(1)} µs per task` : ''),
      `Redis per task: kq ${micros(kq.f.brokerCpuUs?.median)} µs (${commandMix(kq.f.redisCommands)}), ${other.label} ${micros(other.f.brokerCpuUs?.median)} µs (${commandMix(other.f.redisCommands)})` +
        ceilings(kq.f.brokerCpuUs?.median, other.f.brokerCpuUs?.median, other.label),
    ];
    if (bytes.kq !== null && bytes.other !== null) {
      parts.push(`bytes per task in Redis: kq ${bytes.kq.toFixed(0)} (the Kombu envelope of a protocol 2 message, decoded on every delivery, and the unacked copy Kombu keeps), ${other.label} ${bytes.other.toFixed(0)}`);
    }
    return parts.join('; ');
  };
}

/** With more worker processes, Redis's one core is the limit: 1 s over its time per task. */
function ceilings(kqUs: number | undefined, otherUs: number | undefined, otherLabel: string): string {
  if (!kqUs || !otherUs) return '';
  return ` — Redis alone caps kq at ~${formatRate(1e6 / kqUs)} however many workers, ${otherLabel} at ~${formatRate(1e6 / otherUs)}`;
}

function publishWhy(kq: Found<Rate>, other: Found<Rate>): string {
  const parts = [
    `producer CPU per task: kq ${micros(kq.f.workerCpuUs?.median)} µs, ${other.label} ${micros(other.f.workerCpuUs?.median)} µs`,
    `Redis per task: kq ${micros(redisTotal(kq.f.redisCommands))} µs (${commandMix(kq.f.redisCommands)}), ${other.label} ${micros(redisTotal(other.f.redisCommands))} µs (${commandMix(other.f.redisCommands)})`,
  ];
  if (kq.f.bytesPerTask && other.f.bytesPerTask) parts.push(`bytes per task: kq ${kq.f.bytesPerTask.median.toFixed(0)}, ${other.label} ${other.f.bytesPerTask.median.toFixed(0)}`);
  return parts.join('; ');
}

export function checkTargets(outcomes: readonly CaseOutcome[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const bytesOf = (id: SystemId): number | null => rateOf(outcomes, 'redis', 'W1', all(system(id), mode('bulk'), variant(null)))?.f.bytesPerTask?.median ?? null;
  const bytes = (id: SystemId) => ({ kq: bytesOf('kq'), other: bytesOf(id) });

  // Redis W2: kq acks late (a Lua move to the unacked hash, then an ack), the peers complete after the handler.
  const kq100 = rateOf(outcomes, 'redis', 'W2', system('kq', all(concurrency(100), variant(null))));
  const kq1 = rateOf(outcomes, 'redis', 'W2', system('kq', all(concurrency(1), variant(null))));
  checks.push(
    ratioCheck('W2 drain, Redis, acks late: kq ≥ 1.5× bee-queue at concurrency 100', kq100, rateOf(outcomes, 'redis', 'W2', system('bee-queue', concurrency(100))), 1.5, drainWhy(1.5, bytes('bee-queue'))),
    ratioCheck('W2 drain, Redis: kq ≥ 3× BullMQ at concurrency 100', kq100, rateOf(outcomes, 'redis', 'W2', system('bullmq', concurrency(100))), 3, drainWhy(3, bytes('bullmq'))),
    ratioCheck('W2 drain, Redis: kq ≥ bee-queue at concurrency 1', kq1, rateOf(outcomes, 'redis', 'W2', system('bee-queue', concurrency(1))), 1, drainWhy(1, bytes('bee-queue'))),
  );

  // Redis W1, against the raw driver sending the same envelopes, and bee-queue's bulk save.
  const kqAwaited = rateOf(outcomes, 'redis', 'W1', system('kq', mode('awaited')));
  const kqBulk = rateOf(outcomes, 'redis', 'W1', system('kq', mode('bulk')));
  checks.push(
    ratioCheck(
      'W1 enqueue, Redis: kq awaited ≥ 0.9× raw ioredis awaited LPUSH of the same envelopes',
      kqAwaited,
      rateOf(outcomes, 'redis', 'W1', system('raw-ioredis', all(mode('awaited'), variant('celery-message')))),
      0.9,
      publishWhy,
    ),
    ratioCheck('W1 enqueue, Redis: kq bulk ≥ bee-queue saveAll', kqBulk, rateOf(outcomes, 'redis', 'W1', system('bee-queue', mode('bulk'))), 1, publishWhy),
    ratioCheck(
      'W1 enqueue, Redis: kq bulk ≥ 0.6× raw ioredis pipelined LPUSH of the same envelopes',
      kqBulk,
      rateOf(outcomes, 'redis', 'W1', system('raw-ioredis', all(mode('bulk'), variant('celery-message')))),
      0.6,
      publishWhy,
    ),
  );

  // Redis W3.
  const kqTrip = latencyOf(outcomes, 'redis', system('kq'));
  const beeTrip = latencyOf(outcomes, 'redis', system('bee-queue'));
  const tripWhy = (kq: Found<Latency>, other: Found<Latency> | null): string =>
    `Redis per round trip: kq ${micros(redisTotal(kq.f.redisCommands))} µs (${commandMix(kq.f.redisCommands, 4)})` +
    (other ? `, ${other.label} ${micros(redisTotal(other.f.redisCommands))} µs (${commandMix(other.f.redisCommands, 4)})` : '') +
    ' — a Celery round trip is a publish, a fetch into the unacked hash, the result stored and published (SET + PUBLISH of the result meta) and an ack';
  if (kqTrip && beeTrip) {
    const met = kqTrip.f.p50.median <= beeTrip.f.p50.median;
    checks.push({
      goal: 'W3 round trip, Redis: kq p50 ≤ bee-queue p50',
      measured: `kq ${kqTrip.f.p50.median.toFixed(3)} ms vs ${beeTrip.label} ${beeTrip.f.p50.median.toFixed(3)} ms: **${(beeTrip.f.p50.median / kqTrip.f.p50.median).toFixed(2)}×**`,
      met,
      ...(met ? {} : { why: tripWhy(kqTrip, beeTrip) }),
    });
  } else {
    checks.push({ goal: 'W3 round trip, Redis: kq p50 ≤ bee-queue p50', measured: 'not measured', met: null });
  }
  if (kqTrip) {
    const met = kqTrip.f.p99.median <= 3;
    const peersP99 = beeTrip ? `; ${beeTrip.label} p99 ${beeTrip.f.p99.median.toFixed(2)} ms on the same machine` : '';
    checks.push({
      goal: 'W3 round trip, Redis: kq p99 ≤ 3 ms',
      measured: `kq ${kqTrip.f.p99.median.toFixed(3)} ms`,
      met,
      ...(met ? {} : { why: `${tripWhy(kqTrip, null)}${peersP99} (the tail is the shared machine's scheduling: 4 processes on 2 cores)` }),
    });
  } else {
    checks.push({ goal: 'W3 round trip, Redis: kq p99 ≤ 3 ms', measured: 'not measured', met: null });
  }

  // RabbitMQ.
  const rawCelery = rateOf(outcomes, 'amqp', 'W1', system('raw-amqplib', all(mode('awaited'), variant('celery-message'))));
  checks.push(
    ratioCheck(
      'W1 enqueue, RabbitMQ: kq awaited ≥ 0.9× raw amqplib awaited with confirms',
      rateOf(outcomes, 'amqp', 'W1', system('kq', mode('awaited'))),
      rateOf(outcomes, 'amqp', 'W1', system('raw-amqplib', all(mode('awaited'), variant(null)))),
      0.9,
      (kq, raw) =>
        `an awaited publish is one broker round trip (publish, then its confirm) per task; the raw row sends bare JSON, kq a protocol 2 message (19 headers in an AMQP field table); ` +
        `RabbitMQ CPU per publish: kq ${micros(kq.f.brokerCpuUs?.median)} µs, ${raw.label} ${micros(raw.f.brokerCpuUs?.median)} µs` +
        (rawCelery ? ` — raw amqplib sending those same Celery messages awaited runs ${formatRate(rawCelery.f.rate.median)}, kq ${(kq.f.rate.median / rawCelery.f.rate.median).toFixed(2)}× of it, ${raw.label} ${(raw.f.rate.median / rawCelery.f.rate.median).toFixed(2)}× of it` : ''),
    ),
  );
  const rawConsume = rateOf(outcomes, 'amqp', 'W2', system('raw-amqplib', variant('celery-message')));
  checks.push(
    ratioCheck(
      'W2 drain, RabbitMQ: kq ≥ 1.5× celery.node',
      rateOf(outcomes, 'amqp', 'W2', system('kq', concurrency(100))),
      rateOf(outcomes, 'amqp', 'W2', system('celery-node')),
      1.5,
      (kq, node) => {
        const parts = [
          `${node.label} acks each message on receipt, with no prefetch limit; kq acks late (prefetch 400, acks coalesced)`,
          `RabbitMQ CPU per task: kq ${micros(kq.f.brokerCpuUs?.median)} µs, ${node.label} ${micros(node.f.brokerCpuUs?.median)} µs; worker CPU per task: kq ${micros(kq.f.workerCpuUs?.median)} µs, ${node.label} ${micros(node.f.workerCpuUs?.median)} µs`,
        ];
        if (rawConsume) {
          const floor = rawConsume.f.rate.median;
          parts.push(
            `raw amqplib consuming the same Celery messages with no worker at all (prefetch 200, an ack each) reaches ${formatRate(floor)}, ` +
              `${(floor / node.f.rate.median).toFixed(2)}× ${node.label}; kq runs at ${(kq.f.rate.median / floor).toFixed(2)}× of it` +
              (floor < 1.5 * node.f.rate.median ? ': even without a worker, consuming these messages stays below 1.5× — the broker\'s work per persistent protocol 2 message is the limit' : ''),
          );
        }
        return parts.join('; ');
      },
    ),
  );
  const kqRpc = latencyOf(outcomes, 'amqp', system('kq'));
  const rawRpc = latencyOf(outcomes, 'amqp', system('raw-amqplib'));
  if (kqRpc && rawRpc) {
    const ratio = kqRpc.f.p50.median / rawRpc.f.p50.median;
    const met = ratio <= 2;
    checks.push({
      goal: 'W3 round trip, RabbitMQ: kq rpc:// p50 ≤ 2× raw amqplib reply-queue round trip',
      measured: `kq ${kqRpc.f.p50.median.toFixed(3)} ms vs ${rawRpc.label} ${rawRpc.f.p50.median.toFixed(3)} ms: **${ratio.toFixed(2)}×**`,
      met,
      ...(met
        ? {}
        : {
            why: 'kq publishes the task with a publisher confirm awaited (persistent, as Celery does) and the worker acks after the task and publishes the reply; the raw round trip publishes without waiting for a confirm — one broker round trip fewer (~0.3 ms each here)',
          }),
    });
  } else {
    checks.push({ goal: 'W3 round trip, RabbitMQ: kq rpc:// p50 ≤ 2× raw amqplib reply-queue round trip', measured: 'not measured', met: null });
  }
  if (outcomes.some((o) => o.case.broker === 'postgres')) checks.push(...postgresTargets(outcomes));
  return checks;
}

/** What a PostgreSQL case cost the server per task: its CPU, the WAL written and the transactions committed. */
function postgresCost(label: string, f: { brokerCpuUs: { median: number } | null; walBytesPerTask: { median: number } | null; commitsPerTask: { median: number } | null }): string {
  const commits = f.commitsPerTask ? `${f.commitsPerTask.median >= 0.1 ? f.commitsPerTask.median.toFixed(2) : `1/${Math.round(1 / f.commitsPerTask.median)}`} commits` : '? commits';
  return `${label} ${micros(f.brokerCpuUs?.median)} µs of PostgreSQL CPU, ${f.walBytesPerTask ? f.walBytesPerTask.median.toFixed(0) : '?'} WAL bytes, ${commits}`;
}

function postgresDrainWhy(kq: Found<Rate>, other: Found<Rate>): string {
  return (
    `worker CPU per task: kq ${micros(kq.f.workerCpuUs?.median)} µs, ${other.label} ${micros(other.f.workerCpuUs?.median)} µs; ` +
    `per task: ${postgresCost('kq', kq.f)}; ${postgresCost(other.label, other.f)} (2 cores shared by the worker and the server)`
  );
}

/** Issue #35's goals for kq on PostgreSQL against pg-boss and graphile-worker, same-run ratios. */
function postgresTargets(outcomes: readonly CaseOutcome[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const drain = (id: SystemId): Found<Rate> | null => rateOf(outcomes, 'postgres', 'W2', system(id, concurrency(100)));
  const bulk = (id: SystemId): Found<Rate> | null => rateOf(outcomes, 'postgres', 'W1', system(id, mode('bulk')));
  checks.push(
    ratioCheck('W2 drain, PostgreSQL: kq ≥ 1.5× graphile-worker at concurrency 100', drain('kq'), drain('graphile-worker'), 1.5, postgresDrainWhy),
    ratioCheck('W2 drain, PostgreSQL: kq ≥ 3× pg-boss at concurrency 100', drain('kq'), drain('pg-boss'), 3, postgresDrainWhy),
    ratioCheck('W1 enqueue, PostgreSQL: kq bulk ≥ graphile-worker addJobs', bulk('kq'), bulk('graphile-worker'), 1, (kq, other) =>
      `producer CPU per task: kq ${micros(kq.f.workerCpuUs?.median)} µs, ${other.label} ${micros(other.f.workerCpuUs?.median)} µs; per task: ${postgresCost('kq', kq.f)}; ${postgresCost(other.label, other.f)}`,
    ),
  );
  const kqTrip = latencyOf(outcomes, 'postgres', system('kq'));
  const graphileTrip = latencyOf(outcomes, 'postgres', system('graphile-worker'));
  const tripCost = (trip: Found<Latency>): string => postgresCost(trip.label, trip.f);
  if (kqTrip && graphileTrip) {
    const met = kqTrip.f.p50.median <= graphileTrip.f.p50.median;
    checks.push({
      goal: 'W3 round trip, PostgreSQL: kq p50 ≤ graphile-worker p50',
      measured: `kq ${kqTrip.f.p50.median.toFixed(2)} ms vs ${graphileTrip.label} ${graphileTrip.f.p50.median.toFixed(2)} ms: **${(graphileTrip.f.p50.median / kqTrip.f.p50.median).toFixed(2)}×**`,
      met,
      ...(met ? {} : { why: `per round trip: ${tripCost(kqTrip)}; ${tripCost(graphileTrip)}` }),
    });
  } else {
    checks.push({ goal: 'W3 round trip, PostgreSQL: kq p50 ≤ graphile-worker p50', measured: 'not measured', met: null });
  }
  if (kqTrip) {
    const met = kqTrip.f.p50.median <= 2;
    checks.push({
      goal: 'W3 round trip, PostgreSQL: kq p50 ≤ 2 ms',
      measured: `kq ${kqTrip.f.p50.median.toFixed(2)} ms`,
      met,
      ...(met ? {} : { why: `per round trip: ${tripCost(kqTrip)}; each commit that must reach the disk waits for a WAL flush` }),
    });
  } else {
    checks.push({ goal: 'W3 round trip, PostgreSQL: kq p50 ≤ 2 ms', measured: 'not measured', met: null });
  }
  // What a task costs the database owner from publish to ack: its bulk publish plus its drain at concurrency 100.
  const perTask = (id: SystemId, pick: (f: Rate) => { median: number } | null): number | null => {
    const published = bulk(id);
    const drained = drain(id);
    const a = published ? pick(published.f) : null;
    const b = drained ? pick(drained.f) : null;
    return a && b ? a.median + b.median : null;
  };
  const peers: SystemId[] = ['kq', 'pg-boss', 'graphile-worker'];
  for (const [what, pick, unit] of [
    ['PostgreSQL CPU', (f: Rate) => f.brokerCpuUs, 'µs'],
    ['WAL bytes', (f: Rate) => f.walBytesPerTask, 'bytes'],
  ] as const) {
    const goal = `PostgreSQL: kq's ${what} per task (bulk publish + drain at concurrency 100) the lowest of the three`;
    const values = peers.map((id) => ({ id, value: perTask(id, pick) }));
    const kq = values[0]?.value ?? null;
    if (kq === null || values.some((entry) => entry.value === null)) {
      checks.push({ goal, measured: 'not measured', met: null });
      continue;
    }
    const met = values.every((entry) => entry.id === 'kq' || (entry.value ?? 0) >= kq);
    checks.push({
      goal,
      measured: values.map((entry) => `${entry.id === 'kq' ? '**kq**' : entry.id} ${(entry.value ?? 0).toFixed(0)} ${unit}`).join(', '),
      met,
      ...(met ? {} : { why: peers.map((id) => [bulk(id), drain(id)].filter((found): found is Found<Rate> => found !== null).map((found) => postgresCost(found.label, found.f)).join('; ')).join('; ') }),
    });
  }
  return checks;
}
