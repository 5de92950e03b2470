import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Delivery } from '@kq/core';
import type { RedisTransport } from '@kq/redis';
import { brokerReachable, brokerUrls, waitFor } from '@kq/test-harness';
import { App } from '../src/app/app';
import { decodeTaskMessage } from '../src/protocol/index';
import { definePeriodic, periodicStep, periodicTasks, StopPeriodic, type PeriodicOptions, type PeriodicRecord } from '../src/beat/periodic/index';
import type { Worker } from '../src/runtime/worker';
import type { TaskContext } from '../src/task/task';

type Kind = 'memory' | 'redis' | 'amqp';

const transports: Array<{ kind: Kind; url: string; up: boolean }> = [
  { kind: 'memory', url: 'memory://', up: true },
  { kind: 'redis', url: `${brokerUrls.redis.replace(/\/\d*$/, '')}/0`, up: await brokerReachable('redis') },
  { kind: 'amqp', url: brokerUrls.amqp, up: await brokerReachable('amqp') },
];

function brokerUrl(kind: Kind, url: string, name: string): string {
  return kind === 'memory' ? `memory://${name.replace(/[^a-z0-9-]/gi, '-')}` : url;
}

/** A group of workers (one App each, as separate processes would have) running one periodic task. */
class Cluster {
  readonly apps: App[] = [];
  readonly workers: Worker[] = [];

  constructor(
    readonly kind: Kind,
    readonly url: string,
    readonly name: string,
  ) {}

  async start<R>(count: number, fn: (ctx: TaskContext) => Promise<R>, options: Omit<PeriodicOptions<[]>, 'register'>): Promise<void> {
    for (let i = 0; i < count; i++) {
      const app = new App(`periodic-${i}`, { broker: brokerUrl(this.kind, this.url, this.name), taskDefaultQueue: `${this.name}.runs` });
      app.log.level = 'critical';
      this.apps.push(app);
      definePeriodic<[], R>(app, this.name, fn, options); // the transport's own register (transport.cycleRegister)
      this.workers.push(app.worker({ concurrency: 2, steps: [periodicStep()], loglevel: 'critical', hostname: `w${i}@test` }));
    }
    // All at once, as three workers deployed together would.
    await Promise.all(this.workers.map((worker) => worker.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.stop()));
  }

  /** Takes every message of a queue (decoded JSON bodies, or the deliveries' headers for task messages). */
  async drain<T>(queue: string, read: (delivery: Delivery) => T): Promise<T[]> {
    const channel = await (this.apps[0] as App).connection.channel();
    const out: T[] = [];
    for (;;) {
      const delivery = await channel.get(queue, { noAck: true });
      if (!delivery) return out;
      out.push(read(delivery));
    }
  }

  async cleanUp(): Promise<void> {
    const app = this.apps[0] as App;
    const channel = await app.connection.channel();
    const queues = [`${this.name}.runs`, `${this.name}.periodic.control`, `${this.name}.periodic.dead`];
    if (this.kind === 'amqp') queues.push(`${this.name}.periodic.register`);
    for (const queue of queues) await channel.deleteQueue(queue).catch(() => undefined);
    if (this.kind === 'redis') await ((await app.connection.transport()) as RedisTransport).redisStore.commands.del(`_kq.periodic.${this.name}`);
    await Promise.all(this.apps.map((each) => each.close()));
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.concurrent.each(transports)('periodic tasks on $kind', ({ kind, url, up }) => {
  it.skipIf(!up)('three workers start one cycle, and a phased task never overlaps itself under slow runs', async () => {
    const name = `periodic-${kind}-${randomUUID()}.slow`;
    const cluster = new Cluster(kind, url, name);
    const runs: Array<{ run: number; cycle: string; start: number; end: number; worker: string }> = [];
    let active = 0;
    let maxActive = 0;
    try {
      await cluster.start(
        3,
        async (ctx) => {
          const meta = ctx.request.headers['kq_periodic'] as { run: number; cycle: string };
          active++;
          maxActive = Math.max(maxActive, active);
          const start = performance.now();
          await sleep(300); // slower than the 0.2 s period
          active--;
          runs.push({ run: meta.run, cycle: meta.cycle, start, end: performance.now(), worker: ctx.request.hostname });
        },
        { every: 0.2 },
      );
      await waitFor(() => runs.length >= 5, 20_000, () => `five runs (saw ${runs.length})`);
      await cluster.stop();

      expect(maxActive).toBe(1);
      expect(new Set(runs.map((run) => run.cycle)).size).toBe(1);
      expect(runs.map((run) => run.run)).toEqual(runs.map((_, index) => index + 1));
      for (let i = 1; i < runs.length; i++) expect(runs[i]!.start).toBeGreaterThanOrEqual(runs[i - 1]!.end);
      const records = await cluster.drain(`${name}.periodic.control`, (delivery) => delivery.decode<PeriodicRecord>());
      expect(records.filter((record) => record.event === 'created')).toHaveLength(1);
      expect(records.filter((record) => record.event === 'started').map((record) => record.run)).toEqual(runs.map((run) => run.run));
    } finally {
      await cluster.stop();
      await cluster.cleanUp();
    }
  }, 40_000);

  it.skipIf(!up)('a run failing past maxAttempts is parked in the dead-letter queue and the cycle goes on', async () => {
    const name = `periodic-${kind}-${randomUUID()}.flaky`;
    const cluster = new Cluster(kind, url, name);
    const done: number[] = [];
    try {
      await cluster.start(
        2,
        async (ctx) => {
          const meta = ctx.request.headers['kq_periodic'] as { run: number; attempt: number };
          if (meta.run === 2) throw new TypeError(`run 2 fails (attempt ${meta.attempt})`);
          done.push(meta.run);
        },
        { every: 0.2, maxAttempts: 2, retryDelay: 0.1 },
      );
      await waitFor(() => done.includes(4), 20_000, () => `run 4 (done: ${done.join(', ')})`);
      await cluster.stop();

      expect(done.slice(0, 3)).toEqual([1, 3, 4]);
      const dead = await cluster.drain(`${name}.periodic.dead`, (delivery) => decodeTaskMessage(delivery));
      expect(dead).toHaveLength(1);
      expect(dead[0]!.name).toBe(name);
      expect(dead[0]!.headers['kq_periodic']).toMatchObject({ run: 2, attempt: 2 });
      expect(dead[0]!.headers['kq_periodic_failure']).toMatchObject({ type: 'TypeError', message: 'run 2 fails (attempt 2)', attempts: 2 });

      const records = await cluster.drain(`${name}.periodic.control`, (delivery) => delivery.decode<PeriodicRecord>());
      const story = records.filter((record) => record.run <= 3 && record.event !== 'sent').map((record) => `${record.event} ${record.run}.${record.attempt}`);
      expect(story).toEqual(['created 1.1', 'started 1.1', 'done 1.1', 'started 2.1', 'failed 2.1', 'started 2.2', 'failed 2.2', 'dead 2.2', 'started 3.1', 'done 3.1']);
      expect(records.find((record) => record.event === 'failed' && record.attempt === 1)?.retry).toBe(true);
      expect(records.find((record) => record.event === 'dead')?.error).toEqual({ type: 'TypeError', message: 'run 2 fails (attempt 2)' });
    } finally {
      await cluster.stop();
      await cluster.cleanUp();
    }
  }, 40_000);
});

describe('periodic task cycle control (memory)', () => {
  it('StopPeriodic ends the cycle, and workers do not start a new one until restarted', async () => {
    const name = `periodic-stop-${randomUUID()}`;
    const cluster = new Cluster('memory', 'memory://', name);
    const seen: number[] = [];
    try {
      await cluster.start(
        1,
        async (ctx) => {
          const { run } = ctx.request.headers['kq_periodic'] as { run: number };
          seen.push(run);
          if (run === 2) throw new StopPeriodic('enough', 'bye');
        },
        { every: 0.05 },
      );
      const periodic = periodicTasks(cluster.apps[0] as App)[0]!;
      await waitFor(async () => (await periodic.status())?.cycle === 'stopped', 5000, 'the cycle to stop');
      expect(seen).toEqual([1, 2]);
      expect(await periodic.start()).toBe(false); // what a worker's watchdog does: nothing
      expect(await periodic.start({ restart: true })).toBe(true);
      await waitFor(() => seen.length >= 3, 5000, 'a run of the restarted cycle');
      expect(seen[2]).toBe(1);
    } finally {
      await cluster.stop();
      await cluster.cleanUp();
    }
  });
});
