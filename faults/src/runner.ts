import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from '@kq/core';
import { App } from '@kq/worker';
import type { BrokerNode } from './brokers/broker-node';
import { Ledger } from './ledger';
import type { FaultContext, Scenario } from './scenario';
import { WorkerHandle } from './worker-handle';

/** One scenario's outcome on one broker. */
export interface ScenarioResult {
  scenario: string;
  broker: string;
  sent: number;
  finished: number;
  /** Ids that never finished. */
  lost: number;
  /** Runs beyond one per id. */
  duplicates: number;
  /** Tasks started and not finished at the fault marks (summed over the marks): the duplicates they may cause. */
  inFlight: number;
  /** From the last fault mark to the first task finished after it (or after a lasting fault ended), ms. */
  resumeMs: number | null;
  /** Highest RSS of any worker, MiB. */
  maxRssMiB: number;
  /** Whether the last worker was still running at the end. */
  workerAlive: boolean;
  passed: boolean;
  note: string;
}

const DRAIN_TIMEOUT_MS = 120_000;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs one scenario against a started broker: send, drain, inject, drain to the end, count. */
export async function runScenario(scenario: Scenario, broker: BrokerNode, smoke: boolean): Promise<ScenarioResult> {
  const dir = mkdtempSync(join(tmpdir(), 'kq-faults-'));
  const ledger = new Ledger(join(dir, 'ledger.log'));
  const queue = `faults.${scenario.name}.${randomUUID().slice(0, 8)}`;
  const env = {
    FAULTS_BROKER: broker.url,
    FAULTS_QUEUE: queue,
    FAULTS_LEDGER: ledger.path,
    FAULTS_TRANSPORT_OPTIONS: JSON.stringify(broker.transportOptions ?? {}),
    FAULTS_QUEUE_ARGUMENTS: JSON.stringify(broker.queueArguments ?? {}),
    ...scenario.workerEnv,
  };
  const producer = new App('faults-producer', {
    broker: broker.url,
    taskDefaultQueue: queue,
    ...(broker.queueArguments ? { taskQueues: [new Queue(queue, { durable: true, arguments: broker.queueArguments })] } : {}),
    brokerTransportOptions: { ...broker.transportOptions, logger: { warn: () => undefined } },
    taskPublishRetryPolicy: { maxRetries: 200, intervalStart: 100, intervalStep: 100, intervalMax: 500 },
  });
  const workers: WorkerHandle[] = [];
  const marks: number[] = [];
  let inFlight = 0;
  const finishedCount = (): number => new Set(ledger.read().filter((entry) => entry.kind === 'finish').map((entry) => entry.id)).size;
  const count = smoke ? (scenario.smokeTasks ?? scenario.tasks) : scenario.tasks;
  const ids: string[] = [];
  try {
    for (let i = 0; i < (scenario.workers ?? 1); i++) workers.push(await WorkerHandle.start(env));
    const send = async (more: number): Promise<void> => {
      const fresh = Array.from({ length: more }, (_, i) => `${scenario.name}-${ids.length + i}`);
      ids.push(...fresh);
      await producer.sendTasks(fresh.map((id) => ({ name: scenario.task ?? 'faults.work', args: [id, scenario.taskMs], options: { taskId: id } })));
    };
    await send(count);
    await waitFor(() => finishedCount() >= scenario.faultAfter, 60_000, `${scenario.faultAfter} tasks to finish before the fault`);
    const context: FaultContext = {
      broker,
      queue,
      workers,
      smoke,
      startWorker: async (extra = {}) => {
        const worker = await WorkerHandle.start({ ...env, ...extra });
        workers.push(worker);
        return worker;
      },
      progress: async (more) => {
        const target = finishedCount() + more;
        await waitFor(() => finishedCount() >= Math.min(target, ids.length), 60_000, `${more} more tasks to finish`);
      },
      poison: (total) => poison(producer, queue, total),
      send,
      mark: (victim) => {
        marks.push(Date.now());
        // Runs the victim (else the live workers) started and did not get acked: a run that finished but whose ack had
        // not reached the broker runs again as surely as one cut short. A dead worker is counted at its own fault.
        const alive = new Set((victim ? [victim] : workers.filter((worker) => worker.alive)).map((worker) => worker.child.pid));
        const open = new Set<string>();
        for (const entry of ledger.read()) {
          const run = `${entry.id} ${entry.pid}`;
          if (entry.kind === 'start') open.add(run);
          else if (entry.kind === 'acked') open.delete(run);
        }
        inFlight += [...open].filter((run) => alive.has(Number(run.split(' ')[1]))).length;
      },
    };
    await scenario.inject(context);
    const faultOver = Date.now();
    const drained = await waitFor(() => finishedCount() >= ids.length, DRAIN_TIMEOUT_MS, 'every task to finish').then(
      () => true,
      () => false,
    );
    await sleep(scenario.settleMs ?? 1000); // a late duplicate would start by now
    const entries = ledger.read();
    const starts = new Map<string, number>();
    const finishes = new Set<string>();
    for (const entry of entries) {
      if (entry.kind === 'start') starts.set(entry.id, (starts.get(entry.id) ?? 0) + 1);
      else finishes.add(entry.id);
    }
    const lost = ids.filter((id) => !finishes.has(id)).length;
    const duplicates = ids.reduce((sum, id) => sum + Math.max(0, (starts.get(id) ?? 0) - 1), 0);
    // From the last fault mark to the first task finished after it (after the fault was over, for faults that last).
    const lastMark = marks.at(-1);
    const from = scenario.lastingFault ? faultOver : lastMark;
    const firstFinishAfter = from === undefined ? undefined : entries.find((entry) => entry.kind === 'finish' && entry.at >= from)?.at;
    const resumeMs = lastMark !== undefined && firstFinishAfter !== undefined ? firstFinishAfter - lastMark : null;
    const last = workers.at(-1);
    const workerAlive = last?.alive ?? false;
    if (scenario.everyTaskIsAFault) inFlight = ids.length;
    const failure = scenario.failure?.(workers);
    const passed = lost === 0 && duplicates <= inFlight && workerAlive && failure === undefined;
    const notes = [!drained ? 'drain timed out' : '', !workerAlive ? 'worker died' : '', duplicates > inFlight ? 'avoidable duplicates' : '', failure ?? ''].filter(Boolean);
    return {
      scenario: scenario.name,
      broker: broker.kind,
      sent: ids.length,
      finished: finishes.size,
      lost,
      duplicates,
      inFlight,
      resumeMs,
      maxRssMiB: Math.max(0, ...workers.map((worker) => worker.maxRssMiB)),
      workerAlive,
      passed,
      note: notes.join('; '),
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.kill()));
    await producer.close().catch(() => undefined);
    // FAULTS_KEEP_LEDGER=1 keeps the ledger (every start and finish, with pid and time) to study a failure.
    if (process.env['FAULTS_KEEP_LEDGER']) console.log(`ledger kept at ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Malformed task messages of every kind a broken producer sends, published straight into the queue. */
async function poison(app: App, queue: string, total: number): Promise<void> {
  const kinds = [
    { body: '{not json', contentType: 'application/json', headers: { task: 'faults.work', id: 'p' } },
    { body: '[[1], {}]', contentType: 'application/json', headers: { task: 'faults.work', id: 'p' } },
    { body: '[[], {}, {}]', contentType: 'application/json', headers: { id: 'p' } },
    { body: '[[], {}, {}]', contentType: 'application/json', headers: { task: 'faults.unknown', id: 'p' } },
    { body: '\x80\x04', contentType: 'application/x-python-serialize', headers: { task: 'faults.work', id: 'p' } },
  ];
  const channel = await app.connection.channel();
  const batch = 500;
  for (let at = 0; at < total; at += batch) {
    const messages = [];
    for (let i = at; i < Math.min(total, at + batch); i++) {
      const kind = kinds[i % kinds.length] as (typeof kinds)[number];
      messages.push({ body: Buffer.from(kind.body), contentType: kind.contentType, contentEncoding: 'utf-8', headers: { ...kind.headers, id: `poison-${i}` }, properties: {} });
    }
    if (channel.publishBatch) await channel.publishBatch('', queue, messages);
    else for (const message of messages) await channel.publish('', queue, message);
  }
}
