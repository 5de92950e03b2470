/**
 * An unknown task, as a Python Celery 5 worker handles it and as a kq worker does: the same FAILURE meta (extended
 * fields included, all null) and the same task-failed event, so Flower and Celery's State see it fail either way.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { brokerReachable, pythonAvailable } from '@kq/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { clusterSteps } from '../src/cluster/cluster-steps';
import type { ReceivedEvent } from '../src/events/event';
import { EventReceiver } from '../src/events/event-receiver';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';
import { startPythonWorker } from './fixtures/python-client';

const DB = 11;
const BROKER = `redis://127.0.0.1:6379/${DB}`;
const ready = (await brokerReachable('redis', BROKER)) && (await pythonAvailable(['celery']));

async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!ready)('an unknown task on a Python worker and on a kq worker', () => {
  const ns = `kqunk${randomUUID().slice(0, 8)}`;
  const events: ReceivedEvent[] = [];
  let app: App;
  let worker: Worker;
  let receiver: EventReceiver;
  let python: ChildProcess;

  beforeAll(async () => {
    app = new App('unknown', { broker: BROKER, backend: BROKER, controlExchange: ns, eventExchange: `${ns}.ev`, resultExtended: true, taskDefaultQueue: `${ns}.kq` });
    receiver = new EventReceiver(app.connection, { clock: app.clock, exchange: app.conf.eventExchange, handlers: { 'task-failed': (event) => events.push(event) } });
    await receiver.start();
    worker = app.worker({ hostname: `kq@${ns}`, logger: new Logger('unknown', { level: 'critical', sink: () => undefined }), steps: clusterSteps({ taskEvents: true, mingle: false, gossip: false }) });
    await worker.start();
    python = startPythonWorker(
      `py@${ns}`,
      {
        KQ_INTEROP_BROKER: BROKER,
        KQ_INTEROP_BACKEND: BROKER,
        KQ_INTEROP_PY_QUEUE: `${ns}.py`,
        KQ_INTEROP_NAMESPACE: ns,
        KQ_INTEROP_RESULT_EXTENDED: '1',
        KQ_INTEROP_EVENT_EXCHANGE: `${ns}.ev`,
      },
      ['-E', '-l', 'critical'],
    );
  });

  afterAll(async () => {
    python?.kill('SIGKILL');
    await worker?.stop();
    await receiver?.close();
    await app?.close();
  });

  it('stores the same FAILURE meta and sends the same task-failed event', async () => {
    const meta = async (id: string): Promise<Record<string, unknown> | undefined> => {
      const text = spawnSync('redis-cli', ['-n', String(DB), '--raw', 'GET', `celery-task-meta-${id}`], { encoding: 'utf8' }).stdout.trim();
      return text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>);
    };
    const viaPython = (await app.sendTask('interop.nope', [1], { a: 2 }, { queue: `${ns}.py` })).id;
    const viaKq = (await app.sendTask('interop.nope', [1], { a: 2 }, { queue: `${ns}.kq` })).id;
    const [pyMeta, kqMeta] = await Promise.all([waitFor(() => meta(viaPython), 'the Python failure'), waitFor(() => meta(viaKq), 'the kq failure')]);
    const comparable = ({ date_done: _d, task_id: _t, ...rest }: Record<string, unknown>): Record<string, unknown> => rest;
    expect(Object.keys(kqMeta)).toEqual(Object.keys(pyMeta));
    expect(comparable(kqMeta)).toEqual(comparable(pyMeta));
    const pyEvent = await waitFor(() => events.find((event) => event['uuid'] === viaPython), 'the Python task-failed event');
    const kqEvent = await waitFor(() => events.find((event) => event['uuid'] === viaKq), 'the kq task-failed event');
    expect(Object.keys(kqEvent).sort()).toEqual(Object.keys(pyEvent).sort());
    expect(kqEvent['exception']).toBe(pyEvent['exception']);
    expect(kqEvent['exception']).toBe("NotRegistered('interop.nope')");
  }, 40_000);
});
