/**
 * Golden diffs against a live Python Celery 5 worker (issue 16): every remote-control reply and every event a kq
 * worker sends must have the shape Python's has — the same keys in the same order, the same value types — so Flower,
 * `celery inspect` and Python's `State` cannot tell them apart. One Python worker (solo pool, -E) and one kq worker
 * share a Redis broker; Python's own client asks both the same question and the replies' shapes are diffed.
 */
import { randomUUID } from 'node:crypto';
import { brokerReachable, brokerUrls, pythonAvailable } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { clusterSteps } from '../src/cluster/cluster-steps';
import type { ReceivedEvent } from '../src/events/event';
import { EventReceiver } from '../src/events/event-receiver';
import { Retry } from '../src/errors/errors';
import type { Worker } from '../src/runtime/worker';
import { recordingLogger, waitFor } from './fixtures/cluster/helpers';
import { amqpCleanup, redisCleanup, type InteropBroker } from './fixtures/cluster/interop-suite';
import { PythonDriver, PythonWorker, type PythonEnv } from './fixtures/cluster/python-fleet';

const DB = 10;
const python = await pythonAvailable(['celery', 'redis', 'amqp']);
const brokers: InteropBroker[] = [
  { kind: 'redis', url: `${brokerUrls.redis}/${DB}`, pythonUrl: `${brokerUrls.redis}/${DB}`, cleanup: redisCleanup(DB) },
  { kind: 'amqp', url: brokerUrls.amqp, pythonUrl: `${brokerUrls.amqp.replace(/\/+$/, '')}//`, cleanup: amqpCleanup },
];

/**
 * A value's shape: objects keep their keys in order, lists the shape of their first item, anything else its type.
 * Python's `None` and kq's `null` are the same shape.
 */
type Shape = string | Shape[] | { [key: string]: Shape };
function shapeOf(value: unknown, depth = 0): Shape {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return value.length === 0 || depth > 4 ? [] : [shapeOf(value[0], depth + 1)];
  if (typeof value === 'object') {
    const out: { [key: string]: Shape } = {};
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) out[key] = shapeOf(item, depth + 1);
    return out;
  }
  return typeof value;
}

/** Keys whose values legitimately differ between a solo Python pool and a kq pool, or per installation. */
function withoutLocal(value: unknown, paths: readonly string[], prefix = ''): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (paths.includes(path)) continue;
    out[key] = withoutLocal(item, paths, path);
  }
  return out;
}

for (const broker of brokers) {
const ready = python && (await brokerReachable(broker.kind));
describe.skipIf(!ready)(`golden diffs against a live Python Celery worker on ${broker.kind}`, { timeout: 60_000 }, () => {
  const ns = `kqg${randomUUID().slice(0, 8)}`;
  const queue = `${ns}.q`;
  const kqQueue = `${ns}.kq`;
  const kqName = `kq@${ns}`;
  const pyName = `py@${ns}`;
  const url = broker.url;
  const env: PythonEnv = { KQ_INTEROP_BROKER: broker.pythonUrl, KQ_INTEROP_CONTROL: ns, KQ_INTEROP_EVENTS: `${ns}.ev`, KQ_INTEROP_QUEUE: queue };
  const config = { broker: url, controlExchange: ns, eventExchange: `${ns}.ev`, etaStrategy: 'worker' as const };
  const events: ReceivedEvent[] = [];
  let app: App;
  let worker: Worker;
  let monitorApp: App;
  let monitor: EventReceiver;
  let python: PythonWorker;
  let driver: PythonDriver;

  const both = async (op: 'inspect' | 'broadcast', method: string, args: Record<string, unknown> = {}): Promise<{ py: unknown; kq: unknown }> => {
    const ask = async (node: string): Promise<unknown> => {
      const replies = await driver.run<unknown>({ op, method, destination: [node], arguments: args, timeout: 3 });
      const reply = op === 'inspect' ? (replies as Record<string, unknown> | null) : (replies as Array<Record<string, unknown>>).find((entry) => node in entry);
      if (!reply || !(node in reply)) throw new Error(`${node} did not answer ${method}: ${JSON.stringify(replies)}`);
      return reply[node];
    };
    const [py, kq] = await Promise.all([ask(pyName), ask(kqName)]);
    return { py, kq };
  };

  beforeAll(async () => {
    app = new App('golden', config);
    app.task('interop.add', (_ctx, x: number, y: number) => x + y);
    app.task('interop.fail', () => {
      throw new RangeError('kq says no');
    });
    app.task('interop.retry_once', async (ctx) => (ctx.request.retries === 0 ? ctx.retry({ countdown: 0.1 }) : ctx.request.retries), { maxRetries: 1 });
    worker = app.worker({ hostname: kqName, queues: [kqQueue], logger: recordingLogger(kqName).logger, steps: clusterSteps({ taskEvents: true }) });
    await worker.start();
    monitorApp = new App('golden-monitor', config);
    monitor = new EventReceiver(monitorApp.connection, { clock: monitorApp.clock, exchange: `${ns}.ev`, handlers: { '*': (event) => void events.push(event) } });
    await monitor.start();
    python = await PythonWorker.start(env, pyName, ['--heartbeat-interval', '2']);
    driver = await PythonDriver.start(env);
  }, 60_000);

  afterAll(async () => {
    await driver?.stop();
    await python?.stop();
    await worker?.stop();
    await monitor?.close();
    await monitorApp?.close();
    await app?.close();
    const janitor = new App('golden-cleanup', config);
    await broker.cleanup(ns, janitor).catch(() => undefined);
    await janitor.close();
  }, 60_000);

  it.each([
    ['inspect', 'ping', {}],
    ['inspect', 'clock', {}],
    ['inspect', 'active', {}],
    ['inspect', 'reserved', {}],
    ['inspect', 'scheduled', {}],
    ['inspect', 'revoked', {}],
    ['inspect', 'active_queues', {}],
    ['inspect', 'query_task', { ids: ['nothing'] }],
    ['inspect', 'report', {}],
    ['inspect', 'objgraph', {}],
    ['inspect', 'hello', { from_node: 'golden@x', revoked: {} }],
    ['broadcast', 'rate_limit', { task_name: 'interop.add', rate_limit: '100/m' }],
    ['broadcast', 'time_limit', { task_name: 'interop.add', soft: 10, hard: 20 }],
    ['broadcast', 'enable_events', {}],
    ['broadcast', 'pool_restart', {}],
    ['broadcast', 'autoscale', { max: 2, min: 1 }],
    ['broadcast', 'add_consumer', { queue: `${ns}.extra` }],
    ['broadcast', 'cancel_consumer', { queue: `${ns}.extra` }],
  ] as const)('%s %s: the same reply shape', async (op, method, args) => {
    const { py, kq } = await both(op, method, args);
    // Python's report is its software/platform text; only its type is comparable.
    expect(shapeOf(kq)).toEqual(shapeOf(py));
  });

  it('inspect memsample: the humanized RSS Python gives with psutil (None without it)', async () => {
    const { py, kq } = await both('inspect', 'memsample');
    expect(['null', 'string']).toContain(shapeOf(py));
    expect(kq).toMatch(/^\d+(\.\d+)?(b|KB|MB|GB)$/);
  });

  it('inspect stats: the same keys, broker and rusage alike; the pool entry has what a Python pool has', async () => {
    const { py, kq } = await both('inspect', 'stats');
    const local = ['pool', 'broker.transport_options'];
    expect(shapeOf(withoutLocal(kq, local))).toEqual(shapeOf(withoutLocal(py, local)));
    const pyPool = Object.keys((py as { pool: Record<string, unknown> }).pool);
    expect(Object.keys((kq as { pool: Record<string, unknown> }).pool)).toEqual(expect.arrayContaining(pyPool));
  });

  it('inspect registered and conf: lists of task names, settings by their Celery names', async () => {
    const { py, kq } = await both('inspect', 'registered');
    expect(shapeOf(kq)).toEqual(shapeOf(py));
    // Without with_defaults both list only what was changed; with it, every setting by its Celery name.
    const changed = await both('inspect', 'conf');
    expect(Object.keys(changed.kq as Record<string, unknown>)).toEqual(expect.arrayContaining(['broker_url', 'control_exchange', 'event_exchange']));
    const conf = await both('inspect', 'conf', { with_defaults: true });
    const pyKeys = Object.keys(conf.py as Record<string, unknown>);
    const kqKeys = Object.keys(conf.kq as Record<string, unknown>);
    expect(kqKeys.every((key) => /^[a-z_]+$/.test(key))).toBe(true);
    expect(kqKeys.filter((key) => pyKeys.includes(key)).length).toBeGreaterThan(30);
  });

  it('every task and worker event type has the same fields, in the same order, as Python sends', async () => {
    const send = (name: string, to: string, id: string): Promise<unknown> => driver.run({ op: 'send_task', name, args: name === 'interop.add' ? [1, 2] : [], queue: to, task_id: id });
    for (const [to, side] of [[queue, 'py'], [kqQueue, 'kq']] as const) {
      await send('interop.add', to, `${side}-ok-${ns}`);
      await send('interop.fail', to, `${side}-fail-${ns}`);
      await send('interop.retry_once', to, `${side}-retry-${ns}`);
    }
    const types = ['task-received', 'task-started', 'task-succeeded', 'task-failed', 'task-retried', 'worker-heartbeat'];
    const of = (hostname: string, type: string): ReceivedEvent | undefined => events.find((event) => event.hostname === hostname && event.type === type);
    await waitFor(() => types.every((type) => of(pyName, type) && of(kqName, type)), 20_000, 'every event type from both workers');
    for (const type of types) {
      const py = of(pyName, type) as ReceivedEvent;
      const kq = of(kqName, type) as ReceivedEvent;
      // Python's State and Flower read these by name; the order is kombu's JSON order, compared too.
      expect({ type, keys: Object.keys(kq) }).toEqual({ type, keys: Object.keys(py) });
      expect({ type, shape: shapeOf(withoutLocal(kq, ['result', 'exception', 'traceback'])) }).toEqual({ type, shape: shapeOf(withoutLocal(py, ['result', 'exception', 'traceback'])) });
    }
    void Retry;
  });
});
}
