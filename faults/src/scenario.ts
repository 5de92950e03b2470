import type { BrokerNode } from './brokers/broker-node';
import type { WorkerHandle } from './worker-handle';

/** What a scenario's fault can act on. */
export interface FaultContext {
  readonly broker: BrokerNode;
  /** The queue the tasks are sent to. */
  readonly queue: string;
  /** The workers started so far; the first is running when the fault comes. */
  readonly workers: WorkerHandle[];
  /** Starts one more worker (extra environment merged in). */
  startWorker(env?: Record<string, string>): Promise<WorkerHandle>;
  /** Resolves once `count` more tasks finished than when it was called (bounded). */
  progress(count: number): Promise<void>;
  /** Publishes malformed task messages straight into the queue. */
  poison(count: number): Promise<void>;
  /**
   * Marks a fault: counts the runs it may repeat — those `victim` left unfinished when it died, or without a victim
   * those the live workers have under way now — and starts the resume clock.
   */
  mark(victim?: WorkerHandle): void;
  /** True in the CI smoke run (smaller floods). */
  readonly smoke: boolean;
  /** Sends `count` more good tasks (counted like the first ones). */
  send(count: number): Promise<void>;
}

export interface Scenario {
  readonly name: string;
  readonly description: string;
  /** Good tasks sent before the fault. */
  readonly tasks: number;
  /** How long each runs, ms. */
  readonly taskMs: number;
  /** `faults.work` (awaits a timer) or `faults.block` (blocks the event loop). */
  readonly task?: 'faults.work' | 'faults.block';
  /** Workers started before the fault. Default 1. */
  readonly workers?: number;
  /** Environment of the workers. */
  readonly workerEnv?: Record<string, string>;
  /** Tasks finished before the fault is injected. */
  readonly faultAfter: number;
  /** The fault lasts (a broker down or paused): time to resume counts from its mark to the first finish after it ended. */
  readonly lastingFault?: boolean;
  /** Every task is a fault of its own (it outlives its lease): each may run once more. */
  readonly everyTaskIsAFault?: boolean;
  /**
   * How long to watch for late duplicates once every task finished, ms. Default 1000; longer where a failed ack would
   * only show when the claim's lease (3 s) runs out.
   */
  readonly settleMs?: number;
  /** A failure the counts do not show, read from the workers' output once they are done; undefined when none. */
  readonly failure?: (workers: readonly WorkerHandle[]) => string | undefined;
  /** Part of `pnpm faults:smoke` (CI). */
  readonly smoke: boolean;
  /** The broker kinds it runs on; default every single-node kind (the Sentinel and cluster setups are for failover). */
  readonly brokers?: readonly BrokerNode['kind'][];
  /** Smaller size for the smoke run. */
  readonly smokeTasks?: number;
  inject(context: FaultContext): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Stops the running worker with `signals` (in order, `gapMs` apart), waits for it to exit, and starts the next. */
async function stopAndReplace(context: FaultContext, signals: NodeJS.Signals[], gapMs = 100): Promise<void> {
  const victim = context.workers.at(-1) as WorkerHandle;
  for (const [index, signal] of signals.entries()) {
    if (index > 0) await sleep(gapMs);
    victim.signal(signal);
  }
  await victim.exited();
  // Counted once it is gone: what it left unfinished is exactly what may run again (a task it started between the
  // signal and the stop counts too).
  context.mark(victim);
  await context.startWorker();
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'failover',
    description:
      'Sentinel: the master is killed (SIGKILL) mid-drain and the sentinels promote the replica; the worker follows the new master',
    tasks: 600,
    smokeTasks: 300,
    taskMs: 40,
    faultAfter: 50,
    lastingFault: true,
    smoke: true,
    brokers: ['sentinel'],
    async inject(context) {
      context.mark();
      await context.broker.failover?.();
    },
  },
  {
    name: 'node-kill',
    description:
      'RabbitMQ cluster of three with a quorum queue: the node RabbitMQ names as the queue\'s leader (also the clients\' first) is killed (SIGKILL) mid-drain; a new leader is elected and the clients fail over',
    tasks: 600,
    smokeTasks: 300,
    taskMs: 40,
    faultAfter: 50,
    lastingFault: true,
    smoke: true,
    brokers: ['rabbit-cluster'],
    async inject(context) {
      context.mark();
      await context.broker.failover?.();
    },
  },
  {
    name: 'sentinel-sigkill',
    description: 'Sentinel: the worker is killed with SIGKILL mid-drain; a new one, reaching the master through the sentinels, takes over',
    tasks: 300,
    taskMs: 40,
    faultAfter: 30,
    smoke: false,
    brokers: ['sentinel'],
    inject: (context) => stopAndReplace(context, ['SIGKILL']),
  },
  {
    name: 'sigkill',
    description: 'the worker is killed with SIGKILL mid-drain, three times; each time a new one takes over',
    tasks: 600,
    smokeTasks: 150,
    taskMs: 40,
    faultAfter: 30,
    smoke: true,
    async inject(context) {
      for (let round = 0; round < 3; round++) {
        if (round > 0) await context.progress(30);
        await stopAndReplace(context, ['SIGKILL']);
      }
    },
  },
  {
    name: 'warm-shutdown',
    description: 'SIGTERM: running tasks finish, the rest go back; a new worker drains them',
    tasks: 400,
    taskMs: 100,
    faultAfter: 30,
    smoke: false,
    inject: (context) => stopAndReplace(context, ['SIGTERM']),
  },
  {
    name: 'cold-shutdown',
    description: 'SIGTERM then SIGINT: running acks-late tasks are abandoned and go back to the queue',
    tasks: 300,
    smokeTasks: 100,
    taskMs: 500,
    faultAfter: 10,
    smoke: true,
    inject: (context) => stopAndReplace(context, ['SIGTERM', 'SIGINT']),
  },
  {
    name: 'warm-timeout',
    description: 'SIGTERM with a 0.3 s shutdown timeout and 1 s tasks: the warm shutdown gives its running tasks back',
    tasks: 100,
    taskMs: 1000,
    workerEnv: { FAULTS_SHUTDOWN_TIMEOUT: '0.3' },
    faultAfter: 8,
    smoke: false,
    inject: (context) => stopAndReplace(context, ['SIGTERM']),
  },
  {
    name: 'broker-restart',
    description: 'the broker is killed (SIGKILL) and started again on its persisted data after 3 s',
    lastingFault: true,
    tasks: 600,
    taskMs: 40,
    faultAfter: 50,
    smoke: false,
    async inject(context) {
      context.mark();
      await context.broker.kill();
      await sleep(3000);
      await context.broker.start();
    },
  },
  {
    name: 'reshard',
    description: "Redis Cluster: the queue's slot migrates to another master mid-drain, two keys at a time",
    tasks: 600,
    taskMs: 40,
    faultAfter: 50,
    settleMs: 4500,
    smoke: true,
    brokers: ['redis-cluster'],
    // A half-moved slot answers TRYAGAIN for a while: acks wait it out, none fails for good (its task would run again).
    failure: (workers) => (workers.some((worker) => worker.output.includes('Could not ack')) ? 'an ack failed during the migration' : undefined),
    async inject(context) {
      context.mark();
      const moved = await context.broker.reshard?.(context.queue);
      console.log(`  reshard: ${moved}`);
    },
  },
  {
    name: 'connection-kill',
    description: "the broker drops every client connection, five times, one second apart",
    tasks: 800,
    smokeTasks: 600,
    taskMs: 60,
    faultAfter: 30,
    smoke: true,
    async inject(context) {
      for (let round = 0; round < 5; round++) {
        context.mark();
        await context.broker.killConnections();
        await sleep(1000);
      }
    },
  },
  {
    name: 'stall',
    description: 'the broker process is paused (SIGSTOP) for 5 s: connections stay open, nothing answers',
    lastingFault: true,
    tasks: 400,
    taskMs: 40,
    faultAfter: 30,
    smoke: false,
    async inject(context) {
      context.mark();
      context.broker.pause();
      await sleep(5000);
      context.broker.resume();
    },
  },
  {
    name: 'blocked-loop',
    description: 'two workers; each task blocks the event loop 4 s, longer than the 3 s lease',
    tasks: 6,
    taskMs: 4000,
    task: 'faults.block',
    workers: 2,
    // One task held per worker, so a task waiting behind a blocked one is not held (and leased) meanwhile.
    workerEnv: { FAULTS_CONCURRENCY: '1', FAULTS_PREFETCH_MULTIPLIER: '1' },
    everyTaskIsAFault: true,
    faultAfter: 0,
    smoke: false,
    async inject(context) {
      context.mark();
    },
  },
  {
    name: 'poison-flood',
    description: '10,000 malformed messages (2,000 in the smoke run) among 1,000 good ones, half sent behind the flood: every good one runs, the worker stays up',
    tasks: 500,
    smokeTasks: 100,
    taskMs: 5,
    faultAfter: 10,
    smoke: true,
    async inject(context) {
      context.mark();
      await context.poison(context.smoke ? 2000 : 10_000);
      await context.send(context.smoke ? 100 : 500);
    },
  },
];
