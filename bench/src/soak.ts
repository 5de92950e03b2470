// The PostgreSQL soak (issue #35): 1,000,000 tasks through one queue at a steady rate, two kq worker processes
// (concurrency 100 each) taking them, and every 100,000 completed tasks the message table's size (heap and
// indexes), its dead tuples, the autovacuum runs so far, the backlog and the throughput since the last line. A queue
// in PostgreSQL is a table that takes an insert, an update and a delete per message; unless the dead rows are
// reclaimed as fast as they are made, it grows until every scan wades through them — the classic failure of the
// design. Not part of CI: `pnpm bench:soak` (a while: N / rate seconds).
//
//   pnpm bench:soak                                   a private PostgreSQL with stock settings, 1M tasks at 4,000/s
//   pnpm bench:soak -- --n 200000 --rate 3000 --every 20000
//   pnpm bench:soak -- --postgres-url postgresql://postgres@127.0.0.1:5432/kqbench_soak   an existing server
//
// By default the soak starts a PostgreSQL of its own (initdb, stock settings: autovacuum on, as on any production
// server), so a shared server's settings (this machine's has autovacuum off) and its other users do not decide the
// result. Writes bench/SOAK.md, which RESULTS.md includes.
import { rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { PostgresNode } from '@kq/test-harness/postgres-node';
import { App } from '@kq/worker';
import pg from 'pg';
import { TASK_NAME, type RunnerSpec } from './protocol';
import { installExitHooks, RunnerProcess } from './runner-process';
import { acquireRunLock } from './run-lock';
import { BENCH_DIR, kqBuild, runnerCommand, useCompiledRunners } from './systems';
import { compileRunners } from './compile-runners';
import { READY_LINE } from './protocol';

const QUEUE = 'kqbench.soak';
const WORKERS = 2;
const PRIVATE_PORT = 55_435;
/** RESULTS.md shows it under PostgreSQL (main.ts reads it by the same name). */
const SOAK_FILE = 'SOAK.md';

interface Checkpoint {
  completed: number;
  elapsedS: number;
  perSecond: number;
  heapBytes: number;
  indexBytes: number;
  liveTuples: number;
  deadTuples: number;
  autovacuums: number;
  backlog: number;
}

async function main(): Promise<number> {
  installExitHooks();
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((arg) => arg !== '--'),
    options: {
      n: { type: 'string', default: '1000000' },
      rate: { type: 'string', default: '4000' },
      every: { type: 'string', default: '100000' },
      'postgres-url': { type: 'string' },
    },
  });
  const n = Number(values.n);
  const rate = Number(values.rate);
  const every = Number(values.every);
  if (![n, rate, every].every((value) => Number.isInteger(value) && value > 0)) throw new Error('--n, --rate and --every take whole numbers ≥ 1.');
  acquireRunLock('pnpm bench:soak');
  const node = values['postgres-url'] ? null : new PostgresNode(PRIVATE_PORT);
  // Interrupted: the private server is killed (its SIGKILLs go out at once) and its directory removed, before the
  // exit hooks stop the runners and exit.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.prependListener(signal, () => {
      if (!node) return;
      void node.kill().catch(() => undefined);
      rmSync(node.dir, { recursive: true, force: true });
    });
  }
  try {
    if (node) {
      process.stdout.write(`Starting a private PostgreSQL on port ${PRIVATE_PORT} (stock settings)...\n`);
      await node.start();
    }
    const url = values['postgres-url'] ?? (node as PostgresNode).url;
    return await soak(url, { n, rate, every, server: node ? 'a private PostgreSQL with stock settings (autovacuum on)' : url.replace(/\/\/[^@]*@/, '//') });
  } finally {
    await node?.destroy();
  }
}

async function soak(url: string, options: { n: number; rate: number; every: number; server: string }): Promise<number> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  // A clean start: the soak's own tables (the message table's size is what it measures).
  await admin.query('DROP TABLE IF EXISTS kombu_message, kombu_queue, kombu_message_kq_exchange, kombu_message_kq_binding, kombu_message_kq_schema CASCADE');
  await admin.query('DROP SEQUENCE IF EXISTS message_id_sequence, queue_id_sequence');
  const settings = await admin.query<{ name: string; setting: string }>(
    "SELECT name, setting FROM pg_settings WHERE name IN ('autovacuum', 'autovacuum_naptime', 'server_version', 'synchronous_commit')",
  );
  const setting = (name: string): string => settings.rows.find((row) => row.name === name)?.setting ?? '?';

  if (kqBuild().built) useCompiledRunners(await compileRunners());
  const spec: RunnerSpec = {
    role: 'serve',
    broker: 'postgres',
    url,
    backend: null,
    queue: QUEUE,
    n: options.n,
    mode: 'bulk',
    concurrency: 100,
    batch: 1000,
    variant: null,
    timeoutMs: 24 * 3600 * 1000,
  };
  const workers = Array.from({ length: WORKERS }, (_, index) => RunnerProcess.start(runnerCommand('kq', spec, `kq soak worker #${index + 1}`)));
  const app = new App('kqbench', { broker: url, taskDefaultQueue: QUEUE });
  try {
    await Promise.all(workers.map((worker) => worker.waitForLine((line) => line.split(' ')[0] === READY_LINE, 60_000, 'the worker becoming ready')));
    await app.connection.connect();
    process.stdout.write(`Soak: ${options.n.toLocaleString('en-US')} tasks at ${options.rate.toLocaleString('en-US')}/s, ${WORKERS} kq workers × concurrency 100; PostgreSQL ${setting('server_version')}, autovacuum ${setting('autovacuum')} (naptime ${setting('autovacuum_naptime')} s)\n`);
    const started = Date.now();
    let published = 0;
    let failure: unknown;
    // The producer: every 10 ms, what is due by then at the rate — one batch, so a slow publish is caught up by the
    // next, larger one instead of lowering the rate.
    const producing = (async () => {
      for (let tick = 1; published < options.n; tick++) {
        const due = Math.min(options.n, Math.round(((Date.now() - started) / 1000) * options.rate));
        const count = Math.min(Math.max(0, due - published), 5000);
        if (count === 0) {
          await sleep(Math.max(1, started + tick * 10 - Date.now()));
          continue;
        }
        await app.sendTasks(Array.from({ length: count }, (_, index) => ({ name: TASK_NAME, args: [published + index], options: { ignoreResult: true } })));
        published += count;
        const wait = started + tick * 10 - Date.now();
        if (wait > 0) await sleep(wait);
      }
    })().catch((error: unknown) => {
      failure = error;
    });

    const checkpoints: Checkpoint[] = [];
    let last = { completed: 0, at: started };
    const deadline = started + (options.n / options.rate) * 1000 * 3 + 120_000;
    for (;;) {
      if (failure) throw failure;
      // Rows deleted so far (acks), from the table's statistics: cheap at any table size, where a count(*) every
      // 200 ms of a table swollen with dead rows would itself load the server the soak measures. They lag: a busy
      // backend reports them within a second, an idle one only after ten (PostgreSQL 15), which made the last line
      // late by up to ten seconds and its rate low. So once everything is published the end is found by a count of
      // what is left (a small table by then), not by the statistics.
      const finished = published === options.n && (await countRows(admin)) === 0;
      const completed = finished ? options.n : Math.min(published, await deletedRows(admin));
      const rows = published - completed;
      if (completed >= last.completed + options.every || finished) {
        const now = Date.now();
        const checkpoint = await measure(admin, completed, (now - started) / 1000, (completed - last.completed) / ((now - last.at) / 1000), rows);
        checkpoints.push(checkpoint);
        process.stdout.write(`${line(checkpoint)}\n`);
        last = { completed, at: now };
        if (finished) break;
      }
      if (Date.now() > deadline) throw new Error(`the soak did not finish in time: ${completed} of ${options.n} completed, ${rows} rows left`);
      await sleep(200);
    }
    await producing;
    const markdown = report(checkpoints, options, setting);
    await writeFile(join(BENCH_DIR, SOAK_FILE), markdown);
    process.stdout.write(`\n${markdown}\nWrote bench/${SOAK_FILE}.\n`);
    return 0;
  } finally {
    await app.close().catch(() => undefined);
    await Promise.all(workers.map((worker) => worker.stop()));
    await admin.end();
  }
}

async function deletedRows(admin: pg.Client): Promise<number> {
  await admin.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await admin.query<{ n: string }>("SELECT n_tup_del AS n FROM pg_stat_user_tables WHERE relname = 'kombu_message'");
  return Number(rows[0]?.n ?? 0);
}

async function countRows(admin: pg.Client): Promise<number> {
  return Number((await admin.query<{ n: string }>('SELECT count(*) AS n FROM kombu_message')).rows[0]?.n ?? 0);
}

async function measure(admin: pg.Client, completed: number, elapsedS: number, perSecond: number, backlog: number): Promise<Checkpoint> {
  // Statistics reach pg_stat_user_tables within a second; sizes are exact.
  await admin.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await admin.query<{ heap: string; indexes: string; live: string; dead: string; autovacuums: string }>(
    `SELECT pg_relation_size('kombu_message') AS heap, pg_indexes_size('kombu_message') AS indexes,
            s.n_live_tup AS live, s.n_dead_tup AS dead, s.autovacuum_count AS autovacuums
       FROM pg_stat_user_tables s WHERE s.relname = 'kombu_message'`,
  );
  const row = rows[0];
  return {
    completed,
    elapsedS,
    perSecond,
    heapBytes: Number(row?.heap ?? 0),
    indexBytes: Number(row?.indexes ?? 0),
    liveTuples: Number(row?.live ?? 0),
    deadTuples: Number(row?.dead ?? 0),
    autovacuums: Number(row?.autovacuums ?? 0),
    backlog,
  };
}

const MIB = 1024 * 1024;

function line(c: Checkpoint): string {
  return (
    `  ${c.completed.toLocaleString('en-US')} done at ${c.elapsedS.toFixed(0)} s: ${Math.round(c.perSecond).toLocaleString('en-US')}/s, ` +
    `table ${(c.heapBytes / MIB).toFixed(1)} MiB + indexes ${(c.indexBytes / MIB).toFixed(1)} MiB, ${c.deadTuples.toLocaleString('en-US')} dead tuples, ` +
    `${c.autovacuums} autovacuums, ${c.backlog.toLocaleString('en-US')} queued`
  );
}

function report(checkpoints: readonly Checkpoint[], options: { n: number; rate: number; every: number; server: string }, setting: (name: string) => string): string {
  const out = [
    `Measured ${new Date().toISOString()} with \`pnpm bench:soak\`: ${options.n.toLocaleString('en-US')} tasks published at ${options.rate.toLocaleString('en-US')}/s ` +
      `(\`sendTasks\` every 10 ms with what is due by then) into one queue, ${WORKERS} kq worker processes (concurrency 100, acks late) taking them; ` +
      `${options.server}, PostgreSQL ${setting('server_version')}, autovacuum ${setting('autovacuum')}, naptime ${setting('autovacuum_naptime')} s. ` +
      `A line every ${options.every.toLocaleString('en-US')} completed tasks: \`kombu_message\`'s heap and index size, its live and dead tuples ` +
      '(`pg_stat_user_tables`), the autovacuum runs so far, the rows still queued, and the tasks completed per second since the previous line.',
    '',
    '| completed | at s | tasks/s | table MiB | indexes MiB | live tuples | dead tuples | autovacuums | queued |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of checkpoints) {
    out.push(
      `| ${c.completed.toLocaleString('en-US')} | ${c.elapsedS.toFixed(0)} | ${Math.round(c.perSecond).toLocaleString('en-US')} | ${(c.heapBytes / MIB).toFixed(1)} | ` +
        `${(c.indexBytes / MIB).toFixed(1)} | ${c.liveTuples.toLocaleString('en-US')} | ${c.deadTuples.toLocaleString('en-US')} | ${c.autovacuums} | ${c.backlog.toLocaleString('en-US')} |`,
    );
  }
  const first = checkpoints[0];
  const lastOne = checkpoints[checkpoints.length - 1];
  if (first && lastOne && checkpoints.length >= 4) {
    const size = (c: Checkpoint): number => c.heapBytes + c.indexBytes;
    // Throughput over the first two and the last two intervals: one interval alone swings with the shared machine.
    const second = checkpoints[1] as Checkpoint;
    const before = checkpoints[checkpoints.length - 3] as Checkpoint;
    const start = second.completed / second.elapsedS;
    const end = (lastOne.completed - before.completed) / (lastOne.elapsedS - before.elapsedS);
    const largest = checkpoints.reduce((most, c) => Math.max(most, size(c)), 0);
    out.push(
      '',
      `Table and indexes: ${(size(first) / MIB).toFixed(1)} MiB at the first line, ${(size(lastOne) / MIB).toFixed(1)} MiB at the end ` +
        `(${(size(lastOne) / Math.max(1, size(first))).toFixed(2)}×; goal ≤ 2×), ${(largest / MIB).toFixed(1)} MiB at most. Throughput over the last ` +
        `two intervals ${Math.round(end).toLocaleString('en-US')}/s, ${(end / start).toFixed(2)}× the first two's ${Math.round(start).toLocaleString('en-US')}/s ` +
        `(goal ≥ 0.9×); ${Math.round(lastOne.completed / lastOne.elapsedS).toLocaleString('en-US')}/s over the whole soak.`,
    );
  }
  return `${out.join('\n')}\n`;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
