/**
 * Issue 16 (ETA part) against real Python Celery 5.2.6: an ETA task on a queue Python also consumes never depends on
 * a kq process being alive. Redis: a kq worker holds ETA tasks under its renewed lease; SIGKILLed, the task goes back
 * to the queue and a Python worker runs it at its ETA. RabbitMQ: kq's broker delay is Kombu 5.5's ladder, so a
 * message kq delays reaches a Python worker's queue, and one Python puts in the ladder reaches a kq worker's queue.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AmqpTransport, delayRoutingKey } from '@kq/amqp';
import { brokerReachable, pythonAvailable, pythonInterpreter } from '@kq/test-harness';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';

const interopDir = fileURLToPath(new URL('./interop', import.meta.url));
const workerScript = fileURLToPath(new URL('./fixtures/eta-fleet-worker.ts', import.meta.url));
const python = await pythonAvailable(['celery']);
const REDIS_DB = '13';
const REDIS = `redis://127.0.0.1:6379/${REDIS_DB}`;
const AMQP = 'amqp://guest:guest@127.0.0.1:5672';

async function waitFor(what: string, predicate: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function marks(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

interface KqChild {
  child: ChildProcess;
  output: () => string;
  exited: Promise<void>;
}

async function startKq(env: Record<string, string>): Promise<KqChild> {
  // node itself with tsx's loader, not the tsx CLI: SIGKILL must hit the worker, not a wrapper.
  const child = spawn(process.execPath, ['--import', 'tsx', workerScript], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await waitFor('the kq worker to start', () => output.includes('ready\n'), 30_000);
  return { child, output: () => output, exited };
}

function startPython(env: Record<string, string>, name: string): ChildProcess {
  return spawn(pythonInterpreter, ['-m', 'celery', '-A', 'celery_app', 'worker', '-n', name, '--pool', 'solo', '--without-mingle', '--without-gossip', '-l', 'warning'], {
    cwd: interopDir,
    env: { ...process.env, ...env },
    stdio: 'ignore',
  });
}

const children: ChildProcess[] = [];
afterEach(async () => {
  // Wait for each to be gone: a Python worker killed but not yet exited still holds a BRPOP, and Redis hands it the
  // next test's message, which Kombu then loses with the process (a pop is not a claim in Kombu's Redis transport).
  await Promise.all(
    children.splice(0).map((child) => {
      if (child.exitCode !== null || child.signalCode !== null) return undefined;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      return exited;
    }),
  );
});

const redisUp = await brokerReachable('redis', REDIS);
describe.skipIf(!redisUp || !python)('ETA tasks in a mixed kq/Python fleet on Redis', () => {
  const ns = `kqeta${randomUUID().slice(0, 8)}`;
  const queue = `${ns}.q`;
  const dir = mkdtempSync(join(tmpdir(), 'kq-eta-fleet-'));
  // The fleet's visibility timeout: kq derives its heartbeat from it, Kombu restores by it.
  const pyEnv = { KQ_INTEROP_BROKER: REDIS, KQ_INTEROP_BACKEND: REDIS, KQ_INTEROP_PY_QUEUE: queue, KQ_INTEROP_NAMESPACE: ns, KQ_INTEROP_VISIBILITY_TIMEOUT: '2' };
  const client = new App('eta-client', { broker: REDIS, backend: REDIS, taskDefaultQueue: queue, controlExchange: ns, resultExpires: 600, brokerTransportOptions: { visibilityTimeout: 2 } });

  afterAll(async () => {
    await client.close();
    spawnSync('redis-cli', ['-n', REDIS_DB, 'DEL', queue]);
  });

  it('a kq worker holding an ETA task is SIGKILLed; a Python worker on the same queue runs it at its ETA, once', async () => {
    const marker = join(dir, 'held');
    const kq = await startKq({
      KQ_TEST_BROKER: REDIS,
      KQ_TEST_BACKEND: REDIS,
      KQ_TEST_QUEUE: queue,
      KQ_TEST_NAMESPACE: ns,
      KQ_TEST_TRANSPORT_OPTIONS: JSON.stringify({ visibilityTimeout: 2 }),
    });
    children.push(kq.child);
    const eta = Date.now() + 7000;
    const result = await client.sendTask('interop.mark', [marker, 'held'], {}, { eta: new Date(eta) });
    await waitFor('the kq worker to hold the task', () => kq.output().includes(`[${result.id}] received`), 10_000);
    // Held past the visibility timeout: the lease keeper renews it, so Kombu's own sweep (what a Python worker runs)
    // leaves it alone — no visibility-timeout duplicate.
    await sleep(3000);
    const sweep = spawnSync(
      pythonInterpreter,
      ['-c', `from kombu import Connection\nwith Connection("${REDIS}", transport_options={"visibility_timeout": 2}) as c:\n    c.default_channel.qos.restore_visible(num=1000)`],
      { encoding: 'utf8' },
    );
    expect(sweep.status, sweep.stderr).toBe(0);
    expect(spawnSync('redis-cli', ['-n', REDIS_DB, 'LLEN', queue], { encoding: 'utf8' }).stdout.trim()).toBe('0');
    expect(kq.output().split(`[${result.id}] received`).length - 1).toBe(1);

    kq.child.kill('SIGKILL');
    await kq.exited;
    // Only Python from here on: its Kombu restores what the dead worker held once the visibility timeout has passed
    // since the last renewal (at Kombu's own sweep cadence: an empty poll, every tenth call).
    await sleep(2500);
    children.push(startPython(pyEnv, `py1@${ns}`));
    expect(await result.get({ timeout: 60_000 })).toBe('held');
    expect(Date.now()).toBeGreaterThanOrEqual(eta - 20);
    expect(marks(marker)).toEqual(['py held']);
  }, 90_000);

  it('with no kq worker left, a Python worker runs the ETA tasks a kq client sent', { timeout: 40_000 }, async () => {
    const marker = join(dir, 'sent');
    children.push(startPython(pyEnv, `py2@${ns}`));
    const sent = Date.now();
    const result = await client.sendTask('interop.mark', [marker, 'later'], {}, { countdown: 2 });
    expect(await result.get({ timeout: 30_000 })).toBe('later');
    expect(Date.now() - sent).toBeGreaterThanOrEqual(2000 - 20);
    expect(marks(marker)).toEqual(['py later']);
  });
});

const amqpUp = await brokerReachable('amqp', AMQP);
describe.skipIf(!amqpUp || !python)("kq and Python Celery share Kombu's delay ladder on RabbitMQ", () => {
  const ns = `kqeta${randomUUID().slice(0, 8)}`;
  // Kombu's own name prefix keeps this test's ladder apart from the vhost's celery_delayed_* (deleted at the end).
  const prefix = `${ns}_t`;
  const dir = mkdtempSync(join(tmpdir(), 'kq-eta-ladder-'));
  const pyQueue = `${ns}.py`;
  const kqQueue = `${ns}.kq`;
  const pyEnv = { KQ_INTEROP_BROKER: `${AMQP}//`, KQ_INTEROP_BACKEND: 'rpc://', KQ_INTEROP_PY_QUEUE: pyQueue, KQ_INTEROP_NAMESPACE: ns };
  const client = new App('eta-ladder-client', {
    broker: AMQP,
    backend: 'rpc://',
    taskDefaultQueue: pyQueue,
    controlExchange: ns,
    etaStrategy: 'broker',
    brokerTransportOptions: { delayLadderPrefix: prefix },
  });

  afterAll(async () => {
    await client.close();
    const cleaner = new AmqpTransport(AMQP, { delayLadderPrefix: prefix });
    const channel = await cleaner.createChannel();
    for (const queue of [pyQueue, kqQueue]) await channel.deleteQueue(queue).catch(() => undefined);
    await cleaner.deleteDelayLadder();
    await cleaner.close();
  });

  it('a Python Celery 5.2.6 worker runs a task kq delayed through the ladder, at its time', async () => {
    const marker = join(dir, 'to-python');
    children.push(startPython(pyEnv, `py@${ns}`));
    const sent = Date.now();
    const result = await client.sendTask('interop.mark', [marker, 'laddered'], {}, { countdown: 2 });
    expect(await result.get({ timeout: 30_000 })).toBe('laddered');
    expect(Date.now() - sent).toBeGreaterThanOrEqual(2000 - 20);
    expect(marks(marker)).toEqual(['py laddered']);
  }, 40_000);

  it('a message Python puts in the ladder (as Celery 5.5 publishes it) reaches a kq worker queue and runs there', async () => {
    const marker = join(dir, 'to-kq');
    const kq = await startKq({
      KQ_TEST_BROKER: AMQP,
      KQ_TEST_BACKEND: 'rpc://',
      KQ_TEST_QUEUE: kqQueue,
      KQ_TEST_NAMESPACE: ns,
      KQ_TEST_ETA_STRATEGY: 'broker',
      KQ_TEST_TRANSPORT_OPTIONS: JSON.stringify({ delayLadderPrefix: prefix }),
    });
    children.push(kq.child);
    // Straight into <prefix>_celery_delayed_27 with the 28-digit key, through Python Celery's own producer — with a
    // countdown of 2.5 s laddered as 2 s, as Celery 5.5 truncates it: the message comes out early, and the kq worker
    // (broker strategy) sends it back through the ladder for the rest.
    const spec = {
      name: 'interop.mark',
      args: [marker, 'from-python'],
      options: { countdown: 2.5, exchange: `${prefix}_celery_delayed_27`, routing_key: delayRoutingKey(2, kqQueue) },
    };
    const out = spawnSync(pythonInterpreter, ['celery_client.py', JSON.stringify(spec)], { cwd: interopDir, env: { ...process.env, ...pyEnv }, encoding: 'utf8' });
    const outcome = JSON.parse(out.stdout.trim().split('\n').pop() ?? '{}') as { status?: string; result?: unknown; elapsed?: number };
    expect(outcome, `${out.stderr}\n${kq.output()}`).toMatchObject({ status: 'SUCCESS', result: 'from-python' });
    expect(outcome.elapsed).toBeGreaterThanOrEqual(2.4);
    // spawnSync blocked this process: let the worker's buffered log lines in.
    await waitFor("the kq worker's log", () => kq.output().includes('succeeded'), 5000);
    expect(kq.output()).toContain('deferred to the broker');
    expect(kq.output().split('] received').length - 1).toBe(1);
    expect(marks(marker)).toEqual(['kq from-python']);
  }, 40_000);
});
