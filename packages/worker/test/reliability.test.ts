/**
 * At-least-once on real brokers: a worker killed with SIGKILL mid-task (acks late) has the task run again by the
 * next worker with exactly one success; a warm shutdown with tasks in flight loses none; malformed messages pushed
 * into a live queue leave the worker processing the good ones.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Exchange, Queue } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const workerScript = fileURLToPath(new URL('./fixtures/reliability-worker.ts', import.meta.url));

const setups = [
  { kind: 'redis' as const, broker: 'redis://127.0.0.1:6379/6', backend: 'redis://127.0.0.1:6379/6' },
  { kind: 'amqp' as const, broker: 'amqp://guest:guest@127.0.0.1:5672', backend: 'rpc://' },
];

const lines = (file: string): string[] => {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

for (const setup of setups) {
  const up = await brokerReachable(setup.kind, setup.broker);
  describe.skipIf(!up)(`reliability on ${setup.kind}`, () => {
    const children: ChildProcess[] = [];
    let app: App | undefined;

    const context = (): { ns: string; env: Record<string, string>; dir: string } => {
      const ns = `kqrel${randomUUID().slice(0, 8)}`;
      return {
        ns,
        dir: mkdtempSync(join(tmpdir(), 'kq-rel-')),
        env: { KQ_TEST_BROKER: setup.broker, KQ_TEST_BACKEND: setup.backend, KQ_TEST_QUEUE: `${ns}.q`, KQ_TEST_NAMESPACE: ns },
      };
    };

    const exited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

    /** A worker process, once it says it is ready; `mayDie` when the task waiting for it kills it first. */
    const startWorker = async (env: Record<string, string>, name: string, mayDie = false): Promise<ChildProcess> => {
      // node itself (with tsx's loader), not the tsx CLI: SIGKILL must hit the worker, not a wrapper process.
      const child = spawn(process.execPath, ['--import', 'tsx', workerScript], {
        cwd: root,
        env: { ...process.env, ...env, KQ_TEST_HOSTNAME: name, TSX_TSCONFIG_PATH: join(root, 'tsconfig.json') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await waitFor(() => output.includes('ready') || exited(child), 30_000, `worker ${name} to start`);
      if (exited(child) && !mayDie) throw new Error(`worker ${name} exited: ${output}`);
      return child;
    };

    const client = (env: Record<string, string>): App => {
      app = new App('client', { broker: setup.broker, backend: setup.backend, taskDefaultQueue: env['KQ_TEST_QUEUE'], controlExchange: env['KQ_TEST_NAMESPACE'] });
      return app;
    };

    afterEach(async () => {
      for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
      await app?.close();
      app = undefined;
    });

    it('runs a task again after its worker is killed with SIGKILL mid-task, with exactly one success', async () => {
      const { env, dir } = context();
      const marker = join(dir, 'hang-once.log');
      const first = await startWorker(env, 'victim@test');
      const result = await client(env).sendTask('rel.hang_once', [marker]);
      await waitFor(() => lines(marker).includes('started'), 15_000, 'the task to start');
      first.kill('SIGKILL');
      const rescuer = await startWorker(env, 'rescuer@test');
      let log = '';
      rescuer.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
      const value = await result.get({ timeout: 30_000 }).catch((error: unknown) => {
        throw new Error(`${String(error)}; markers ${JSON.stringify(lines(marker))}; rescuer log: ${log}`);
      });
      expect(value).toBe('done');
      expect(lines(marker)).toEqual(['started', 'started', 'succeeded']);
    }, 60_000);

    it('loses nothing in a warm shutdown with tasks in flight', async () => {
      const { env, dir } = context();
      const marker = join(dir, 'slow.log');
      const first = await startWorker({ ...env, KQ_TEST_CONCURRENCY: '2' }, 'warm@test');
      const sender = client(env);
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => sender.sendTask('rel.slow', [marker, i])));
      await waitFor(() => lines(marker).length >= 1, 15_000, 'the first task to finish');
      first.kill('SIGTERM');
      await new Promise<void>((resolve) => first.once('exit', () => resolve()));
      await startWorker(env, 'after@test');
      const values = await Promise.all(results.map((result) => result.get({ timeout: 30_000 })));
      expect(values).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      // Each task completed exactly once: the warm shutdown finished what it ran and gave back the rest.
      expect(lines(marker).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `done ${i}`).sort());
    }, 60_000);

    const shutdownUnderLoad = async (stop: (worker: ChildProcess) => Promise<void>, extraEnv: Record<string, string> = {}): Promise<void> => {
      const { env, dir } = context();
      const marker = join(dir, 'hang-first.log');
      const first = await startWorker({ ...env, KQ_TEST_CONCURRENCY: '10', ...extraEnv }, 'stopped@test');
      const sender = client(env);
      const ids = Array.from({ length: 10 }, (_, i) => i);
      const results = await Promise.all(ids.map((i) => sender.sendTask('rel.hang_first', [marker, i])));
      await waitFor(() => lines(marker).length >= 10, 15_000, 'all ten tasks to start');
      const exited = new Promise<void>((resolve) => first.once('exit', () => resolve()));
      await stop(first);
      await exited;
      if (setup.backend !== 'rpc://') {
        // Abandoned by the shutdown, not revoked: nothing stored, so the task is still PENDING.
        expect(await Promise.all(results.map((result) => result.state()))).toEqual(ids.map(() => 'PENDING'));
      }
      await startWorker({ ...env, KQ_TEST_CONCURRENCY: '10' }, 'after@test');
      expect(await Promise.all(results.map((result) => result.get({ timeout: 30_000 })))).toEqual(ids);
      for (const i of ids) {
        expect(lines(marker).filter((line) => line === `start ${i}`)).toHaveLength(2);
        expect(lines(marker).filter((line) => line === `done ${i}`)).toHaveLength(1);
      }
    };

    it('gives running acks-late tasks back on a cold shutdown (SIGTERM then SIGINT): none is lost or stored REVOKED', async () => {
      await shutdownUnderLoad(async (worker) => {
        worker.kill('SIGTERM');
        await new Promise((resolve) => setTimeout(resolve, 200));
        worker.kill('SIGINT');
      });
    }, 90_000);

    it('gives running acks-late tasks back when a warm shutdown passes its timeout', async () => {
      await shutdownUnderLoad(async (worker) => {
        worker.kill('SIGTERM');
      }, { KQ_TEST_SHUTDOWN_TIMEOUT: '0.5' });
    }, 90_000);

    it('a handler that blocks the event loop past the lease runs at most twice and stays SUCCESS (no WorkerLostError, no ping-pong)', async () => {
      const { env, dir } = context();
      const marker = join(dir, 'block.log');
      await startWorker(env, 'blocker-a@test');
      await startWorker(env, 'blocker-b@test');
      const result = await client(env).sendTask('rel.block', [marker, 3000]);
      expect(await result.get({ timeout: 30_000 })).toBe('blocked and done');
      // Several leases later, no copy is still running or coming back.
      await new Promise((resolve) => setTimeout(resolve, 6000));
      const starts = lines(marker).filter((line) => line.startsWith('start'));
      expect(starts.length, lines(marker).join(', ')).toBeLessThanOrEqual(2);
      expect(lines(marker).filter((line) => line.startsWith('done'))).toHaveLength(starts.length);
      if (setup.backend !== 'rpc://') expect(await result.state()).toBe('SUCCESS');
    }, 60_000);

    it.skipIf(setup.kind !== 'amqp')('a task that kills every worker leaves the quorum queue at its delivery limit, for its dead-letter queue', async () => {
      const { env: base, dir, ns } = context();
      const env = { ...base, KQ_TEST_DELIVERY_LIMIT: '2', KQ_TEST_DEAD_LETTER_EXCHANGE: `${ns}.dlx` };
      const queue = `${ns}.q`;
      const marker = join(dir, 'kill.log');
      app = new App('client', {
        broker: setup.broker,
        backend: setup.backend,
        taskDefaultQueue: queue,
        controlExchange: ns,
        taskQueues: [new Queue(queue, { exchange: new Exchange(queue), routingKey: queue, queueType: 'quorum', deliveryLimit: 2, deadLetterExchange: `${ns}.dlx` })],
      });
      const channel = await app.connection.channel();
      await channel.declareQueue(new Queue(`${ns}.dead`, { durable: false, exchange: new Exchange(`${ns}.dlx`, { type: 'fanout', durable: false }) }));
      const poison = await app.sendTask('rel.kill_worker', [marker]);
      let dead = null;
      for (let worker = 0; worker < 6 && !dead; worker++) {
        const child = await startWorker(env, `victim${worker}@test`, true);
        await new Promise<void>((resolve) => (exited(child) ? resolve() : child.once('exit', () => resolve())));
        // The broker dead-letters the message as the connection of the third victim closes.
        await waitFor(() => lines(marker).length > worker, 10_000, `run ${worker + 1}`).catch(() => undefined);
        for (let poll = 0; poll < 20 && !dead; poll++) {
          dead = await channel.get(`${ns}.dead`);
          if (!dead) await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      expect(dead, `runs: ${lines(marker).join(', ')}`).not.toBeNull();
      await dead!.ack();
      // The first delivery and two redeliveries, each killing its worker: then the broker stops handing it out.
      expect(lines(marker)).toHaveLength(3);
      expect(dead!.headers['id']).toBe(poison.id);
      expect((dead!.headers['x-death'] as Array<Record<string, unknown>>)[0]).toMatchObject({ queue, reason: 'delivery_limit' });
      await startWorker(env, 'survivor@test');
      expect(await (await app.sendTask('rel.echo', ['after the poison'])).get({ timeout: 20_000 })).toBe('after the poison');
      await channel.deleteQueue(queue).catch(() => undefined);
      await channel.deleteQueue(`${ns}.dead`).catch(() => undefined);
      await channel.deleteExchange(`${ns}.dlx`).catch(() => undefined);
    }, 90_000);

    it('keeps working when malformed messages are pushed into the live queue', async () => {
      const { env, ns } = context();
      await startWorker(env, 'tough@test');
      const sender = client(env);
      const before = await sender.sendTask('rel.echo', ['before']);
      const queue = `${ns}.q`;
      const channel = await sender.connection.channel();
      const publish = (body: string, headers: Record<string, unknown>, contentType = 'application/json'): Promise<void> =>
        channel.publish('', queue, { body: Buffer.from(body), contentType, contentEncoding: 'utf-8', headers, properties: {} });
      await publish('{not json', { task: 'rel.echo', id: 'garbage' });
      await publish('[[1], {}]', { task: 'rel.echo', id: 'two-elements' });
      await publish('[[], {}, {}]', { id: 'no-task-header' });
      await publish('[[], {}, {}]', { task: 'rel.nope', id: 'unknown-task' });
      await publish('\x80\x04', { task: 'rel.echo', id: 'pickle' }, 'application/x-python-serialize');
      if (setup.kind === 'redis') {
        // Envelopes only a broken or foreign producer would write, straight into the list.
        for (const raw of ['this is not json', '{"headers": {}}', '[1, 2, 3]']) {
          const out = spawnSync('redis-cli', ['-n', '6', 'LPUSH', queue, raw], { encoding: 'utf8' });
          if (out.status !== 0) throw new Error(out.stderr);
        }
      }
      const after = await sender.sendTask('rel.echo', ['after']);
      expect(await before.get({ timeout: 20_000 })).toBe('before');
      expect(await after.get({ timeout: 20_000 })).toBe('after');
    }, 60_000);
  });
}

