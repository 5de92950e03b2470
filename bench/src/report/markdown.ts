// bench/RESULTS.md: the tables per workload with kq's ratio to every other row, the targets, the machine.
import { LOAD_RATE, WORKLOAD_TITLES, WORKLOADS, type BenchCase, type Workload } from '../cases';
import type { ExtraResult } from '../extras';
import type { MachineInfo } from '../machine-info';
import { failureNote, figures, headline, speedup, type CaseFigures, type CaseOutcome } from '../outcome';
import type { Summary } from '../stats';
import type { BrokerKind } from '../protocol';
import { formatMs, formatRate, formatSpeedup } from './format';
import { redisHotPathTargets } from './redis-hot-targets';
import { checkTargets } from './targets';

export interface ReportInput {
  outcomes: readonly CaseOutcome[];
  machine: MachineInfo;
  command: string;
  n: number;
  roundTrips: number;
  runs: number;
  durationS: number;
  chartFile: string;
  /** kq ran as built (packages/dist), not from the TypeScript sources. */
  kqBuilt?: boolean;
  /** Output of the standalone benchmarks (`--extras`). */
  extras?: readonly ExtraResult[];
  /** The last `pnpm bench:soak`'s table (bench/SOAK.md), shown under PostgreSQL. */
  soak?: string;
}

const BROKER_TITLES: Record<BrokerKind, string> = { redis: 'Redis', amqp: 'RabbitMQ', postgres: 'PostgreSQL' };
/** Where the profiles behind a broker's rows live: what kq spends per task, how it was measured, what was tried. */
const BROKER_NOTES: Partial<Record<BrokerKind, string>> = {
  redis: 'What Redis and the worker spend per task, how it was measured and what was tried: [PROFILE-redis.md](PROFILE-redis.md).',
  postgres:
    'How the PostgreSQL columns are measured: [README.md](README.md); what kq\'s claims, acks and round trips cost PostgreSQL, statement by statement, and what was tried: [PROFILE-postgres.md](PROFILE-postgres.md).',
};

export function renderMarkdown(input: ReportInput): string {
  const { outcomes, machine } = input;
  const out: string[] = [];
  out.push('# kq benchmark results', '');
  out.push(
    `Measured ${machine.date} with \`${input.command}\` (${input.runs} runs per case, N = ${input.n.toLocaleString('en-US')} tasks ` +
      `per enqueue/drain run, ${input.roundTrips.toLocaleString('en-US')} round trips per W3 run; the whole suite took ` +
      `${Math.round(input.durationS / 60)} min). Every system ran in its own process, one at a time, against the same Redis and ` +
      'RabbitMQ; Redis was flushed and queues purged before every run, and runs were interleaved (run 1 of every case of a ' +
      'workload, then run 2, ...) so that load from elsewhere falls on all systems alike. Tables show the median of the runs with min and max; ' +
      '**kq ×** is how many times faster kq is than that row (throughput: kq ÷ row, latency: row ÷ kq; above 1 = kq faster), ' +
      'taken from kq in the same mode. ' +
      (input.kqBuilt === false
        ? 'kq ran from its TypeScript sources (the packages were not built).'
        : 'kq ran as users run it: the built packages (`pnpm build`, tsup output), on Node defaults.'),
    '',
  );
  out.push(`![Chart of the medians](${input.chartFile})`, '');

  const checks = [...checkTargets(outcomes), ...redisHotPathTargets(outcomes)];
  out.push('## Targets (issues #22, #31 and #35)', '', '| goal | measured | met |', '|---|---|---|');
  for (const check of checks) {
    out.push(`| ${check.goal} | ${check.measured} | ${check.met === null ? '—' : check.met ? 'yes' : '**no**'} |`);
  }
  out.push('');
  // Every unmet goal with the physical cost in its way, from this run's own measurements.
  const unmet = checks.filter((check) => check.met === false && check.why);
  if (unmet.length > 0) {
    out.push('What stands in the way of the goals not met, measured in this run (Redis: `INFO commandstats` per task, as µs per task × calls per task, 1/34 being one call for 34 tasks):', '');
    for (const check of unmet) out.push(`- **${check.goal}**: ${check.why}.`);
    out.push('');
  }

  for (const broker of ['redis', 'amqp', 'postgres'] as const) {
    const mine = outcomes.filter((o) => o.case.broker === broker);
    if (mine.length === 0) continue;
    out.push(`## ${BROKER_TITLES[broker]}`, '');
    const notes = BROKER_NOTES[broker];
    if (notes) out.push(notes, '');
    for (const workload of WORKLOADS) {
      const rows = mine.filter((o) => o.case.workload === workload);
      if (rows.length === 0) continue;
      out.push(`### ${WORKLOAD_TITLES[workload]} — ${workloadDescription(workload, input)}`, '');
      out.push(...tableFor(workload, rows), '');
    }
    if (broker === 'postgres' && input.soak) out.push('### Soak — `pnpm bench:soak` (run on its own, not by `pnpm bench`)', '', input.soak.trim(), '');
  }

  const failed = outcomes.filter((o) => o.failures.length > 0);
  if (failed.length > 0) {
    out.push('## Failed runs', '', 'Numbers above come from the runs that passed; a case with none shows "failed". What went wrong:', '');
    for (const outcome of failed) {
      const where = `${BROKER_TITLES[outcome.case.broker]} ${outcome.case.workload}, ${outcome.case.label}`;
      for (const failure of outcome.failures) out.push(`- **${where}**: ${oneLine(failure)}`);
    }
    out.push('');
  }

  if (input.extras && input.extras.length > 0) {
    out.push('## Standalone benchmarks (`--extras`)', '', 'Run after the cases above with the same N and runs; their output as printed.', '');
    for (const extra of input.extras) {
      out.push(`### \`src/${extra.file}\`${extra.ok ? '' : ' (failed)'}`, '', '```text', extra.output, '```', '');
    }
  }

  out.push('## Method', '');
  out.push(...METHOD, '');
  out.push('## Machine', '', '| | |', '|---|---|');
  out.push(`| CPU | ${machine.cpu}, ${machine.cores} logical cores |`);
  out.push(`| memory | ${machine.memory} |`);
  out.push(`| OS | ${machine.os} |`);
  out.push(`| load average (1/5/15 min) | before ${machine.loadBefore}; after ${machine.loadAfter} |`);
  out.push(`| Node.js | ${machine.node} |`);
  out.push(`| Redis | ${machine.redis} |`);
  out.push(`| RabbitMQ | ${machine.rabbitmq} |`);
  out.push(`| PostgreSQL | ${machine.postgres} |`);
  out.push(`| Python | ${machine.python} (Debian's python3-celery) |`);
  out.push(`| kq | commit ${machine.kq}, ${input.kqBuilt === false ? 'TypeScript sources run with tsx' : 'built packages (tsup output)'} |`);
  out.push(`| peers | ${Object.entries(machine.packages).map(([name, version]) => `${name} ${version}`).join(', ')} |`);
  out.push('', `Re-run with \`${input.command}\` from the repository root; \`pnpm bench -- --help\` lists the flags.`, '');
  return out.join('\n');
}

function workloadDescription(workload: Workload, input: ReportInput): string {
  const n = input.n.toLocaleString('en-US');
  switch (workload) {
    case 'W1':
      return `one producer publishes ${n} tasks, awaited one by one or in bulk (tasks/s)`;
    case 'W2':
      return `${n} tasks already queued; one worker process runs and acks them all, timed from worker start to the last ack (tasks/s)`;
    case 'W3':
      return `${input.roundTrips.toLocaleString('en-US')} sequential tasks, each published and its result awaited (ms)`;
    case 'W4':
      return `${n} tasks already queued; 1, 2 and 4 worker processes (concurrency 100) or 8 (concurrency 10) drain them together, timed from GO to an empty broker (tasks/s in all)`;
    case 'W5':
      return `a started worker waiting on an empty queue (idle), then draining ${n} tasks a producer publishes meanwhile (peak); resident memory of the worker and its children (MiB)`;
    case 'W6':
      return (
        `W3's ${input.roundTrips.toLocaleString('en-US')} round trips while the same worker process also drains a second queue ` +
        `that another producer feeds at ${LOAD_RATE.toLocaleString('en-US')} tasks/s (ms)`
      );
  }
}

function tableFor(workload: Workload, rows: readonly CaseOutcome[]): string[] {
  switch (workload) {
    case 'W3':
    case 'W6':
      return latencyTable(rows);
    case 'W4':
      return scaleTable(rows);
    case 'W5':
      return memoryTable(rows);
    default:
      return rateTable(rows, workload);
  }
}

/**
 * W4: each system's aggregate rate at 1, 2, 4 processes (and 8 small ones), its speed-up over one process, and Redis's share of the
 * wall time: near 100 % (one core) Redis itself is the limit, not the workers. The ceiling is the rate at which
 * Redis would be that busy — what more worker processes on more cores could reach at most.
 */
function scaleTable(rows: readonly CaseOutcome[]): string[] {
  const lines = [
    '| system | tasks/s (median) | min | max | × one process | worker CPU µs/task | Redis CPU µs/task | Redis busy | Redis ceiling tasks/s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const outcome of rows) {
    const f = figures(outcome);
    if (!f || f.kind !== 'scale') {
      lines.push(`| ${outcome.case.label} | failed | | | | | | | |`);
      continue;
    }
    // Where Redis alone would be busy all the time (one core): 1 s over its command time per task.
    const ceiling = f.brokerCpuUs === null || f.brokerCpuUs.median <= 0 ? '—' : formatRate(1e6 / f.brokerCpuUs.median);
    const single = rows.find((o) => o.case.system === outcome.case.system && o.case.processes === 1);
    const base = single ? headline(single) : null;
    const gain = outcome.case.processes === 1 || base === null ? '—' : `${(f.rate.median / base).toFixed(2)}×`;
    const busy = f.redisBusy === null ? '—' : `${(f.redisBusy.median * 100).toFixed(0)} %`;
    lines.push(
      `| ${name(outcome)} | ${formatRate(f.rate.median)} | ${formatRate(f.rate.min)} | ${formatRate(f.rate.max)} | ${gain} | ` +
        `${formatMicros(f.workerCpuUs)} | ${formatMicros(f.brokerCpuUs)} | ${busy} | ${ceiling} |`,
    );
  }
  return lines;
}

/** W5: idle and peak RSS per system, and kq's idle memory as a share of each row's. */
function memoryTable(rows: readonly CaseOutcome[]): string[] {
  const pgCols = postgresColumns(rows, true, 'task');
  const lines = [`| system | RSS idle MiB (median) | idle min–max | RSS peak MiB (median) | peak min–max | worker CPU µs/task |${pgCols.header}`, `|---|---:|---:|---:|---:|---:|${pgCols.rule}`];
  const mib = (summary: Summary | null): [string, string] =>
    summary === null ? ['—', '—'] : [summary.median.toFixed(0), `${summary.min.toFixed(0)}–${summary.max.toFixed(0)}`];
  for (const outcome of rows) {
    const f = figures(outcome);
    if (!f || f.kind !== 'memory') {
      lines.push(`| ${outcome.case.label} | failed | | | | |`);
      continue;
    }
    const [idle, idleRange] = mib(f.idleMiB);
    const [peak, peakRange] = mib(f.peakMiB);
    lines.push(`| ${name(outcome)} | ${idle} | ${idleRange} | ${peak} | ${peakRange} | ${formatMicros(f.workerCpuUs)} |${pgCols.cells(f)}`);
  }
  return lines;
}

/** Whose CPU the broker column shows: Redis's command time, RabbitMQ's Erlang VM. */
function brokerName(rows: readonly CaseOutcome[]): string {
  const broker = rows[0]?.case.broker ?? 'redis';
  return broker === 'amqp' ? 'RabbitMQ' : broker === 'postgres' ? 'PostgreSQL' : 'Redis';
}

/**
 * PostgreSQL's extra columns — WAL bytes and commits per task (per round trip in W3), and for W3 and W5 its CPU —
 * when any row has them: what the database owner pays.
 */
function postgresColumns(rows: readonly CaseOutcome[], withCpu: boolean, per: string): { header: string; rule: string; cells(f: CaseFigures | null): string } {
  const has = rows.some((o) => {
    const f = figures(o);
    return f !== null && 'walBytesPerTask' in f && f.walBytesPerTask !== null;
  });
  if (!has) return { header: '', rule: '', cells: () => '' };
  return {
    header: `${withCpu ? ` PostgreSQL CPU µs/${per} |` : ''} WAL bytes/${per} | commits/${per} |`,
    rule: `${withCpu ? '---:|' : ''}---:|---:|`,
    cells(f) {
      if (!f || !('walBytesPerTask' in f)) return `${withCpu ? ' |' : ''} | |`;
      const commits = f.commitsPerTask === null ? '—' : f.commitsPerTask.median.toFixed(f.commitsPerTask.median >= 10 ? 0 : 2);
      const cpu = withCpu ? ` ${formatMicros('brokerCpuUs' in f ? f.brokerCpuUs : null)} |` : '';
      return `${cpu} ${f.walBytesPerTask === null ? '—' : f.walBytesPerTask.median.toFixed(0)} | ${commits} |`;
    },
  };
}

function kqReference(rows: readonly CaseOutcome[], match: (c: BenchCase) => boolean): number | null {
  const kq = rows.find((o) => o.case.system === 'kq' && match(o.case));
  return kq ? headline(kq) : null;
}

/**
 * The redis-server process's CPU per task (/proc) as a column beside Redis's command time, when a run measured it:
 * command time counts a script's inner commands (and a MULTI's queued ones) a second time and leaves out the event
 * loop and socket I/O, so the two differ from system to system; both are measured the same way for every system.
 */
function processColumn(rows: readonly CaseOutcome[]): { header: string; rule: string; cell: (f: Extract<CaseFigures, { kind: 'rate' }>) => string } {
  const any = rows.some((o) => { const f = figures(o); return f?.kind === 'rate' && f.redisProcessCpuUs !== null; });
  if (!any) return { header: '', rule: '', cell: () => '' };
  return { header: ' Redis process CPU µs/task |', rule: '---:|', cell: (f) => ` ${formatMicros(f.redisProcessCpuUs)} |` };
}

function rateTable(rows: readonly CaseOutcome[], workload: Workload): string[] {
  const lines: string[] = [];
  if (workload === 'W1') {
    // Bytes per task (Redis): what each task costs to write, keep and read — the envelope, not the code, sets it.
    const bytes = rows.some((o) => { const f = figures(o); return f?.kind === 'rate' && f.bytesPerTask !== null; });
    const cpu = rows.some((o) => { const f = figures(o); return f?.kind === 'rate' && f.workerCpuUs !== null; });
    const broker = rows.some((o) => { const f = figures(o); return f?.kind === 'rate' && f.brokerCpuUs !== null; });
    const pgCols = postgresColumns(rows, false, 'task');
    const proc = processColumn(rows);
    lines.push(
      `| system | tasks/s (median) | min | max | kq × |${cpu ? ' producer CPU µs/task |' : ''}${broker ? ` ${brokerName(rows)} CPU µs/task |` : ''}${proc.header}${bytes ? ' bytes/task in Redis |' : ''}${pgCols.header}`,
      `|---|---:|---:|---:|---:|${cpu ? '---:|' : ''}${broker ? '---:|' : ''}${proc.rule}${bytes ? '---:|' : ''}${pgCols.rule}`,
    );
    for (const outcome of rows) {
      const f = figures(outcome);
      const kq = kqReference(rows, (c) => c.mode === outcome.case.mode);
      if (!f || f.kind !== 'rate') {
        lines.push(`| ${outcome.case.label} | failed | | | |${cpu ? ' |' : ''}${broker ? ' |' : ''}${proc.rule ? ' |' : ''}${bytes ? ' |' : ''}`);
        continue;
      }
      const ratio = outcome.case.system === 'kq' ? '—' : formatSpeedup(speedup(kq, f.rate.median, 'rate'));
      const size = bytes ? ` ${f.bytesPerTask === null ? '—' : f.bytesPerTask.median.toFixed(0)} |` : '';
      const producer = cpu ? ` ${formatMicros(f.workerCpuUs)} |` : '';
      const brokerCpu = broker ? ` ${formatMicros(f.brokerCpuUs)} |` : '';
      lines.push(`| ${name(outcome)} | ${formatRate(f.rate.median)} | ${formatRate(f.rate.min)} | ${formatRate(f.rate.max)} | ${ratio} |${producer}${brokerCpu}${proc.cell(f)}${size}${pgCols.cells(f)}`);
    }
    return lines;
  }
  const kq100 = kqReference(rows, (c) => c.concurrency === 100 && c.variant === null);
  const kq1 = kqReference(rows, (c) => c.concurrency === 1 && c.variant === null);
  // CPU per task moves little between runs on a shared box, where throughput is noisy: shown next to it.
  const pgCols = postgresColumns(rows, false, 'task');
  const proc = processColumn(rows);
  lines.push(
    `| system | tasks/s (median) | min | max | kq (c=100) × | kq (c=1) × | worker CPU µs/task | ${brokerName(rows)} CPU µs/task |${proc.header} worker RSS MiB idle / peak |${pgCols.header}`,
    `|---|---:|---:|---:|---:|---:|---:|---:|${proc.rule}---:|${pgCols.rule}`,
  );
  for (const outcome of rows) {
    const f = figures(outcome);
    if (!f || f.kind !== 'rate') {
      lines.push(`| ${outcome.case.label} | failed | | | | | | |${proc.rule ? ' |' : ''} |`);
      continue;
    }
    const self = outcome.case.system === 'kq';
    lines.push(
      `| ${name(outcome)} | ${formatRate(f.rate.median)} | ${formatRate(f.rate.min)} | ${formatRate(f.rate.max)} | ` +
        `${self ? '—' : formatSpeedup(speedup(kq100, f.rate.median, 'rate'))} | ${self ? '—' : formatSpeedup(speedup(kq1, f.rate.median, 'rate'))} | ` +
        `${formatMicros(f.workerCpuUs)} | ${formatMicros(f.brokerCpuUs)} |${proc.cell(f)} ${formatMemory(f.rssIdleMiB, f.rssPeakMiB)} |${pgCols.cells(f)}`,
    );
  }
  lines.push(...tracingCost(rows));
  return lines;
}

/** What tracing costs: the kq drains without the API, with it and no SDK (the plain row), and with an SDK. */
function tracingCost(rows: readonly CaseOutcome[]): string[] {
  type Rate = Extract<CaseFigures, { kind: 'rate' }>;
  const rate = (variant: string | null): Rate | null => {
    const outcome = rows.find((o) => o.case.system === 'kq' && o.case.concurrency === 100 && o.case.variant === variant);
    const f = outcome ? figures(outcome) : null;
    return f && f.kind === 'rate' ? f : null;
  };
  const cost = (more: Rate, less: Rate): string =>
    more.workerCpuUs && less.workerCpuUs ? `costs ${(more.workerCpuUs.median - less.workerCpuUs.median).toFixed(1)} µs of worker CPU per task` : 'costs an unmeasured amount of worker CPU';
  const plain = rate(null);
  if (!plain) return [];
  const off = rate('untraced');
  const on = rate('traced');
  const lines: string[] = [];
  if (off) lines.push(`Tracing off (\`@opentelemetry/api\` installed, no SDK: the plain row) against no API at all ${cost(plain, off)} and runs the drain at ${(plain.rate.median / off.rate.median).toFixed(2)}× the API-less rate.`);
  if (on) lines.push(`Tracing on (an OpenTelemetry SDK registered; a span per send and per run, batched to an exporter that drops them) ${cost(on, plain)} and runs the drain at ${(on.rate.median / plain.rate.median).toFixed(2)}× the untraced rate.`);
  return lines.length > 0 ? ['', ...lines] : [];
}

/** Resident memory of the worker while it waits and at its peak during the drain (medians over the runs). */
function formatMemory(idle: Summary | null, peak: Summary | null): string {
  if (!idle && !peak) return '—';
  return `${idle ? idle.median.toFixed(0) : '—'} / ${peak ? peak.median.toFixed(0) : '—'}`;
}

function latencyTable(rows: readonly CaseOutcome[]): string[] {
  const kq = rows.find((o) => o.case.system === 'kq');
  const kqFigures = kq ? figures(kq) : null;
  const kqP50 = kqFigures?.kind === 'latency' ? kqFigures.p50.median : null;
  const kqP99 = kqFigures?.kind === 'latency' ? kqFigures.p99.median : null;
  const pgCols = postgresColumns(rows, true, 'trip');
  const lines = [
    `| system | p50 ms (median) | p50 min–max | p99 ms (median) | p99 min–max | kq × (p50) | kq × (p99) |${pgCols.header}`,
    `|---|---:|---:|---:|---:|---:|---:|${pgCols.rule}`,
  ];
  for (const outcome of rows) {
    const f = figures(outcome);
    if (!f || f.kind !== 'latency') {
      lines.push(`| ${outcome.case.label} | failed | | | | | |`);
      continue;
    }
    const self = outcome.case.system === 'kq';
    lines.push(
      `| ${name(outcome)} | ${formatMs(f.p50.median)} | ${formatMs(f.p50.min)}–${formatMs(f.p50.max)} | ${formatMs(f.p99.median)} | ` +
        `${formatMs(f.p99.min)}–${formatMs(f.p99.max)} | ${self ? '—' : formatSpeedup(speedup(kqP50, f.p50.median, 'latency'))} | ` +
        `${self ? '—' : formatSpeedup(speedup(kqP99, f.p99.median, 'latency'))} |${pgCols.cells(f)}`,
    );
  }
  return lines;
}

function name(outcome: CaseOutcome): string {
  const label = outcome.case.system === 'kq' ? `**${outcome.case.label}**` : outcome.case.label;
  const notes = [failureNote(outcome), outcome.skipped ?? null].filter((note): note is string => note !== null);
  return notes.length > 0 ? `${label} (${notes.join('; ')})` : label;
}

function oneLine(text: string): string {
  const first = text.split('\n').slice(0, 3).join(' ').replace(/\|/g, '\\|');
  return first.length > 400 ? `${first.slice(0, 400)}…` : first;
}

const METHOD = [
  '- **Task**: a no-op that returns its argument, the task index (small JSON args). Every index is checked off when it ' +
    'completes, so a lost or duplicated task fails the run instead of skewing it.',
  '- **W1 enqueue**: timing starts once the producer is connected. "Awaited" waits for each publish before the next; ' +
    '"bulk" is the system\'s bulk API (kq `app.sendTasks`, what `task.applyMany` does; BullMQ `addBulk`, bee-queue ' +
    '`saveAll`, an ioredis pipeline), or 1000 publishes in flight at once where there is none (celery.node, amqplib + ' +
    '`waitForConfirms`), in batches of 1000. Python Celery has no bulk publish. kq builds every message as `app.sendTask` ' +
    '(what `task.delay` does) builds it, with confirms on RabbitMQ; celery.node\'s `sendTask` does ' +
    'not return its publish, so the publish it makes is awaited directly. The broker is then checked to hold exactly N messages.',
  '- **W2 drain**: the queue is filled by the system\'s own producer in a separate process and checked to hold N; the ' +
    'worker process, already started and idle, is then told to go, and the clock runs from the call that starts the worker ' +
    '(connecting included) to its last ack. kq and Python Celery ack late (after the task); BullMQ and bee-queue complete ' +
    'jobs after the handler; celery.node acks on receipt (BRPOP / ack-before-run, no prefetch limit on RabbitMQ) and stores ' +
    'every result (in Redis, its cheaper backend). Workers keep nothing after success where they can (no result backend for ' +
    'kq and Python Celery, BullMQ `removeOnComplete`, bee-queue `removeOnSuccess` without events). Afterwards the broker ' +
    'must hold nothing queued, unacked or failed. Python Celery (`celery worker`, prefetch multiplier 4) is timed from its ' +
    '`worker_init` signal to the moment the broker holds nothing queued or unacked (polled every 5 ms).',
  '- **W3 round trip**: a worker process (concurrency 1 where configurable; Python solo or prefork) and a producer process; ' +
    'each task is published and its result awaited before the next. Results: the Redis result backend next to Redis; on ' +
    'RabbitMQ, kq uses `rpc://` and celery.node its amqp backend (a queue per task, deleted afterwards). kq and Python ' +
    'Celery wait on Redis pub/sub or the reply queue, BullMQ on QueueEvents (read from the start of the flushed stream, so ' +
    'no completion is missed), bee-queue on its queue-wide `job succeeded` events (a job\'s own event is lost when the ' +
    'worker finishes before `save()` returns), celery.node by polling (every 1 ms on Redis, 5 ms on RabbitMQ; its default is ' +
    '500 ms).',
  '- **W4 scale**: the queue filled as for W2; 1, 2 or 4 worker processes (concurrency 100 each) or 8 (concurrency 10 each), already started and ' +
    'idle, are told to go at once; the clock runs from GO to the broker holding nothing queued or unacked (polled every 5 ms, ' +
    'confirmed by a second look), so each process\'s start is included. Each then reports the indexes it completed and ' +
    'all must add up to every task exactly once. **Redis busy** is Redis\'s command time (`INFO commandstats`) over the ' +
    'wall time: toward 100 % (one core) Redis is the limit.',
  '- **W5 memory**: a worker started as for W3 (Python prefork with its pool children up; no result backend), left on an ' +
    'empty queue for 1 s, then its RSS (process and children, `/proc`) is the idle figure; a producer then publishes N ' +
    'tasks and the highest RSS sampled every 50 ms until the broker is empty is the peak.',
  `- **W6 round trip under load**: W3 with the worker (concurrency 100) also consuming a second queue that another ` +
    `producer feeds at ${LOAD_RATE.toLocaleString('en-US')} tasks/s in small bulk batches, started 1 s before the round trips.`,
  '- **Same footing**: no per-task logging anywhere (kq workers at `warning`, Celery workers at `WARNING`, celery.node\'s two ' +
    '`console.info` lines per task muted); TCP_NODELAY on every AMQP connection (kq sets it; amqplib, also inside ' +
    'celery.node, leaves Nagle on, which stalls small writes by ~40 ms); kq runs as built (`pnpm bench` builds first), ' +
    'its transport package (and, in the drains, the optional codecs and OpenTelemetry API its App loads) loaded before ' +
    'the clock starts, as the other systems\' modules are by their imports; every Node runner is plain JavaScript on plain Node (bundled by ' +
    'esbuild before the cases, packages left as imports), not run under tsx; on PostgreSQL every case starts on a vacuumed ' +
    'table (`VACUUM (ANALYZE)` of the system\'s table after the purge, untimed: the server runs with autovacuum off, and ' +
    'the peers leave dead rows to it; kq\'s store vacuums its own table as it goes, inside its runs).',
  '- **Raw baselines** show the broker\'s floor: ioredis LPUSH/BRPOP/RPOP with no envelope, no ack and no bookkeeping; ' +
    'amqplib with persistent messages, confirms, prefetch 200 and an ack per message — on bare JSON, and (a second W2 row) ' +
    'on Celery task messages with their protocol 2 headers, the bytes kq and Celery send.',
  '- **Runs**: a case whose run fails keeps its other runs (the table says how many failed; the reasons are listed); a case ' +
    'whose first run takes over 150 s runs once. The machine is shared with whatever else runs on it (see the load average ' +
    'below): numbers are comparable within one run, not across machines.',
];

/** A per-task CPU median in µs, or — where it was not measured. */
function formatMicros(value: { median: number } | null): string {
  return value === null ? '—' : value.median >= 100 ? value.median.toFixed(0) : value.median.toFixed(1);
}
