/**
 * Flower's REST API, metrics and health check on a live fleet: kq workers on Redis (and RabbitMQ) and a Python
 * Celery 5.2.6 worker, seen through the dashboard's events and inspect calls, answered in Flower's shapes.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { brokerReachable, brokerUrls, pythonAvailable } from '@kq/test-harness';
import { Queue } from '@kq/core';
import { App, EventDispatcher, Logger, type Worker } from '@kq/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Dashboard } from '../src/index';
import { overview } from '../src/overview';
import { startPythonWorker } from '../../worker/test/fixtures/python-client';

const quiet = new Logger('test', { level: 'critical', sink: () => undefined });

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const redisUp = await brokerReachable('redis');
const python = await pythonAvailable(['celery']);

describe.skipIf(!redisUp)("Flower's API on a kq fleet on Redis", () => {
  const ns = `kqdash${randomUUID().slice(0, 8)}`;
  const queue = `${ns}.q`;
  const REDIS = `${brokerUrls.redis}/7`;
  const hostname = `w1@${ns}`;
  let app: App;
  let worker: Worker;
  let dashboard: Dashboard;
  let url: string;
  let py: ChildProcess | undefined;
  const get = async (path: string, init?: RequestInit): Promise<{ status: number; body: unknown }> => {
    const response = await fetch(`${url}${path}`, init);
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // plain text (metrics, health check, a refusal)
    }
    return { status: response.status, body };
  };
  const post = (path: string, body?: unknown): Promise<{ status: number; body: unknown }> =>
    get(path, { method: 'POST', ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });

  beforeAll(async () => {
    app = new App('dash-fleet', { broker: REDIS, backend: REDIS, taskDefaultQueue: queue, controlExchange: ns, eventExchange: `${ns}.ev` });
    const child = app.task('dash.child', (_ctx, x: number) => x * 2);
    app.task('dash.add', (_ctx, x: number, y: number) => x + y);
    app.task('dash.boom', () => {
      throw new RangeError('no such page');
    });
    app.task('dash.parent', async (_ctx, x: number) => (await child.delay(x)).id);
    worker = app.worker({ queues: [queue], hostname, logger: quiet, cluster: { taskEvents: true, heartbeatInterval: 0.5, mingle: false, gossip: false } });
    await worker.start();
    dashboard = new Dashboard({ app: new App('dash', { broker: REDIS, backend: REDIS, taskDefaultQueue: queue, controlExchange: ns, eventExchange: `${ns}.ev` }), port: 0, logger: quiet, inspectTimeoutMs: 500 });
    url = await dashboard.start();
  });

  afterAll(async () => {
    py?.kill('SIGKILL');
    await dashboard?.close();
    await dashboard?.app.close();
    await worker?.stop();
    await app?.connection.ensure((channel) => channel.deleteQueue(queue)).catch(() => undefined);
    await app?.close();
  });

  it('GET /api/workers: what each worker answered to stats, active_queues, registered, ... (refresh, one worker, status)', async () => {
    const { body } = await get('/api/workers?refresh=1');
    const info = (body as Record<string, Record<string, unknown>>)[hostname];
    expect(Object.keys(info ?? {}).sort()).toEqual(['active', 'active_queues', 'conf', 'registered', 'reserved', 'revoked', 'scheduled', 'stats', 'timestamp']);
    expect(info?.['registered']).toEqual(expect.arrayContaining(['dash.add', 'dash.boom']));
    expect((info?.['active_queues'] as Array<{ name: string }>).map((q) => q.name)).toEqual([queue]);
    expect((await get(`/api/workers?workername=${hostname}`)).body).toEqual({ [hostname]: info });
    expect((await get('/api/workers?workername=nobody@nowhere')).status).toBe(404);
    await waitFor('a heartbeat', async () => ((await get('/api/workers?status=1')).body as Record<string, boolean>)[hostname] === true);
  });

  /**
   * A dashboard and an app on a namespace of their own (the suite's dashboard must not see these workers), the
   * dashboard's start-up round over and its periodic one an hour away (a full one ten hours): only a worker-online event
   * can make it inspect.
   */
  const newcomerSetup = async (name: string): Promise<{ space: string; watching: Dashboard; base: string; workerApp: App; close: () => Promise<void> }> => {
    const space = `${ns}-${name}`;
    const watching = new Dashboard({ app: new App(`dash-${name}`, { broker: REDIS, controlExchange: space, eventExchange: `${space}.ev` }), port: 0, logger: quiet, inspectTimeoutMs: 1000, inspectIntervalMs: 3_600_000, inspectSteadyIntervalMs: 36_000_000 });
    const base = await watching.start();
    await watching.inspector.inspect(); // a worker starting during the start-up round could answer that one
    const workerApp = new App(name, { broker: REDIS, controlExchange: space, eventExchange: `${space}.ev` });
    workerApp.task('dash.add', (_ctx, x: number, y: number) => x + y);
    const close = async (): Promise<void> => {
      await watching.close();
      await watching.app.close();
      await workerApp.connection.ensure((channel) => channel.deleteQueue(`${space}.q`)).catch(() => undefined);
      await workerApp.close();
    };
    return { space, watching, base, workerApp, close };
  };
  const listed = async (base: string, host: string): Promise<Record<string, unknown>> =>
    waitFor(`${host} in /api/workers`, async () => {
      const body = (await (await fetch(`${base}/api/workers`)).json()) as Record<string, Record<string, unknown>>;
      return body[host]?.['stats'] && body[host]?.['registered'] ? body[host] : undefined;
    }, 8000);

  it('a worker that comes online is inspected at once: /api/workers lists it (stats, registered) without ?refresh=1', async () => {
    const { space, base, workerApp, close } = await newcomerSetup('late');
    const late = workerApp.worker({ queues: [`${space}.q`], hostname: `late@${ns}`, logger: quiet, cluster: { taskEvents: true, heartbeatInterval: 0.5, mingle: false, gossip: false } });
    try {
      await late.start();
      const info = await listed(base, `late@${ns}`);
      expect(info['registered']).toEqual(expect.arrayContaining(['dash.add']));
      expect((info['active_queues'] as Array<{ name: string }>).map((q) => q.name)).toEqual([`${space}.q`]);
    } finally {
      await late.stop();
      await close();
    }
  });

  it('a round between full ones asks no idle worker, and asks one whose heartbeats show it ran a task: /api/workers shows the task', async () => {
    const { space, watching, base, workerApp, close } = await newcomerSetup('idle');
    const host = `idle@${ns}`;
    // No task events: a Python worker without -E shows its work only in its heartbeats' `processed` and `active`.
    const idle = workerApp.worker({ queues: [`${space}.q`], hostname: host, logger: quiet, cluster: { taskEvents: false, heartbeatInterval: 0.5, mingle: false, gossip: false } });
    const asked: Array<{ method: string; destination: readonly string[] | null | undefined }> = [];
    const broadcast = watching.app.control.broadcast.bind(watching.app.control);
    watching.app.control.broadcast = ((method: string, options?: Parameters<typeof broadcast>[1]) => {
      asked.push({ method, destination: options?.destination });
      return broadcast(method, options);
    }) as typeof watching.app.control.broadcast;
    try {
      await idle.start();
      await listed(base, host);
      const lastHeartbeat = (): number => watching.state.cluster.workers.get(host)?.heartbeats.at(-1) ?? 0;
      const seen = lastHeartbeat();
      await waitFor('a heartbeat after the newcomer was inspected', () => lastHeartbeat() > seen);
      asked.length = 0;
      await watching.inspector.round();
      expect(asked).toEqual([]);

      await workerApp.sendTaskMessage('dash.add', [2, 3], { queue: `${space}.q` });
      await waitFor('a heartbeat counting the task', () => watching.state.cluster.workers.get(host)?.processed === 1);
      await watching.inspector.round();
      expect(asked.length).toBeGreaterThan(0);
      expect(asked.every((call) => !call.destination || call.destination.join() === host)).toBe(true);
      const body = (await (await fetch(`${base}/api/workers`)).json()) as Record<string, { stats?: { total?: Record<string, number> } }>;
      expect(body[host]?.stats?.total).toEqual({ 'dash.add': 1 });
    } finally {
      await idle.stop();
      await close();
    }
  });

  it("a worker-online that comes before the worker answers remote control (Celery's Heart starts before its Control) is asked again", async () => {
    const { space, watching, base, workerApp, close } = await newcomerSetup('early');
    const early = `early@${ns}`;
    const announcer = new EventDispatcher(workerApp.connection, { hostname: early, exchange: `${space}.ev` });
    // The worker itself sends no worker-online (no heartbeat): the one above, sent before it starts, is all there is.
    // No worker listens on this namespace's control exchange before it: the first asks end at once, unroutable.
    const worker = workerApp.worker({ queues: [`${space}.q`], hostname: early, logger: quiet, cluster: { heartbeat: false, mingle: false, gossip: false } });
    try {
      announcer.send('worker-online', { freq: 2, active: 0, processed: 0 });
      await waitFor('the worker-online event', () => watching.state.cluster.workers.has(early) || undefined);
      await worker.start();
      expect((await listed(base, early))['registered']).toEqual(expect.arrayContaining(['dash.add']));
    } finally {
      await announcer.close();
      await worker.stop();
      await close();
    }
  });

  it.skipIf(!python)('a Python Celery worker that comes online is inspected at once too', async () => {
    const { space, base, close } = await newcomerSetup('pylate');
    const pyLate = startPythonWorker(`pylate@${ns}`, { KQ_INTEROP_BROKER: REDIS, KQ_INTEROP_BACKEND: REDIS, KQ_INTEROP_PY_QUEUE: `${space}.py`, KQ_INTEROP_NAMESPACE: space, KQ_INTEROP_EVENT_EXCHANGE: `${space}.ev` }, ['-E']);
    try {
      expect((await listed(base, `pylate@${ns}`))['registered']).toEqual(expect.arrayContaining(['interop.py_add']));
    } finally {
      pyLate.kill('SIGKILL');
      await close();
    }
  }, 60_000);

  it('GET /api/tasks, /api/task/info, /api/task/types: tasks in Flower\'s shape, filtered, with children', async () => {
    const ok = await app.sendTask('dash.add', [2, 3]);
    const failed = await app.sendTask('dash.boom');
    const parent = await app.sendTask<string>('dash.parent', [21]);
    const childId = await parent.get({ timeout: 10_000 });
    await failed.get({ timeout: 10_000, propagate: false });
    await waitFor('the events of the child', () => dashboard.state.task(childId)?.state === 'SUCCESS' || undefined);
    const { body } = await get('/api/tasks');
    const tasks = body as Record<string, Record<string, unknown>>;
    expect(tasks[ok.id]).toMatchObject({ uuid: ok.id, name: 'dash.add', state: 'SUCCESS', args: '(2, 3)', kwargs: '{}', result: '5', worker: hostname, retries: 0 });
    expect(typeof tasks[ok.id]?.['runtime']).toBe('number');
    expect(typeof tasks[ok.id]?.['received']).toBe('number');
    expect(tasks[failed.id]).toMatchObject({ state: 'FAILURE', exception: "ValueError('no such page')" });
    expect(Object.keys((await get('/api/tasks?state=FAILURE')).body as object)).toEqual([failed.id]);
    expect(Object.keys((await get('/api/tasks?taskname=dash.add')).body as object)).toEqual([ok.id]);
    expect(Object.keys((await get('/api/tasks?limit=1&sort_by=-received')).body as object)).toHaveLength(1);
    expect((await get(`/api/task/info/${parent.id}`)).body).toMatchObject({ uuid: parent.id, children: [childId] });
    expect((await get(`/api/task/info/${childId}`)).body).toMatchObject({ parent_id: parent.id, root_id: parent.id });
    expect((await get('/api/task/info/no-such-task')).status).toBe(404);
    expect(((await get('/api/task/types')).body as { 'task-types': string[] })['task-types']).toEqual(expect.arrayContaining(['dash.add', 'dash.boom', 'dash.child', 'dash.parent']));
  });

  it('apply, async-apply, send-task and result: Flower\'s {task-id, state, result}, a failure with its repr and traceback', async () => {
    expect((await post('/api/task/apply/dash.add', { args: [4, 5] })).body).toMatchObject({ state: 'SUCCESS', result: 9 });
    const failed = (await post('/api/task/apply/dash.boom')).body as Record<string, unknown>;
    expect(failed).toMatchObject({ state: 'FAILURE', result: "ValueError('no such page')" });
    expect(String(failed['traceback'])).toContain('no such page');
    const queued = (await post('/api/task/async-apply/dash.add', { args: [1, 1], countdown: 0 })).body as Record<string, string>;
    expect(queued['task-id']).toMatch(/^[0-9a-f-]{36}$/);
    const sent = (await post('/api/task/send-task/dash.add', { args: [20, 22] })).body as Record<string, string>;
    expect((await get(`/api/task/result/${sent['task-id']}?timeout=10`)).body).toEqual({ 'task-id': sent['task-id'], state: 'SUCCESS', result: 42 });
    expect((await post('/api/task/apply/dash.add', { args: 'not a list' })).status).toBe(400);
    const late = (await post('/api/task/async-apply/dash.add', { args: [2, 3], eta: '2020-01-01 00:00:00.000000' })).body as Record<string, string>;
    expect((await get(`/api/task/result/${late['task-id']}?timeout=10`)).body).toMatchObject({ state: 'SUCCESS', result: 5 });
    const badEta = await post('/api/task/async-apply/dash.add', { args: [1, 1], eta: 'tomorrow' });
    expect(badEta.status).toBe(400);
    expect((badEta.body as Record<string, string>)['error']).toMatch(/^eta "tomorrow": expected an ISO 8601 datetime/);
  });

  it('re-send from the task page: same name, arguments and queue under a new id; refused (409, with why) when the arguments are cut', async () => {
    const first = await app.sendTask('dash.add', [20, 22]);
    await first.get({ timeout: 10_000 });
    await waitFor('its events', () => dashboard.state.task(first.id)?.state === 'SUCCESS' || undefined);
    // no task-sent event here: the queue is the only one its worker consumes
    expect((await get(`/dashboard/task/${first.id}/resend`)).body).toEqual({ resendable: true, source: 'events', queue, exchange: null, routing_key: null });
    const sent = (await post(`/dashboard/task/${first.id}/resend`)).body as Record<string, string>;
    expect(sent['task-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent['task-id']).not.toBe(first.id);
    expect(sent['message']).toBe(`Sent dash.add again as '${String(sent['task-id'])}'`);
    expect((await get(`/api/task/result/${String(sent['task-id'])}?timeout=10`)).body).toEqual({ 'task-id': sent['task-id'], state: 'SUCCESS', result: 42 });
    await waitFor('the new task on the same queue', () => dashboard.state.task(String(sent['task-id']))?.state === 'SUCCESS' || undefined);

    const long = await app.sendTask('dash.add', ['x'.repeat(2000), 'y']);
    await long.get({ timeout: 10_000 });
    await waitFor('its events', () => dashboard.state.task(long.id)?.state === 'SUCCESS' || undefined);
    const refusal = await post(`/dashboard/task/${long.id}/resend`);
    expect(refusal.status).toBe(409);
    expect((refusal.body as { error: string }).error).toMatch(/argsrepr\/kwargsrepr/);
    expect((await get(`/dashboard/task/${long.id}/resend`)).body).toMatchObject({ resendable: false });
    expect((await post('/dashboard/task/no-such-task/resend')).status).toBe(404);
  });

  it('control: pool grow/shrink/autoscale, consumers, rate and time limits, revoke — Flower\'s messages; unknown worker 404', async () => {
    expect((await post(`/api/worker/pool/grow/${hostname}?n=2`)).body).toEqual({ message: `Growing '${hostname}' worker's pool by 2` });
    expect((await post(`/api/worker/pool/shrink/${hostname}?n=2`)).body).toEqual({ message: `Shrinking '${hostname}' worker's pool by 2` });
    expect((await post(`/api/worker/queue/add-consumer/${hostname}?queue=${ns}.extra`)).body).toEqual({ message: `add consumer ${ns}.extra` });
    expect((await post(`/api/worker/queue/cancel-consumer/${hostname}?queue=${ns}.extra`)).body).toEqual({ message: `no longer consuming from ${ns}.extra` });
    expect((await post(`/api/task/rate-limit/dash.add?workername=${hostname}&ratelimit=100/s`)).body).toEqual({ message: 'new rate limit set successfully' });
    expect((await post(`/api/task/timeout/dash.add?workername=${hostname}&soft=10&hard=20`)).body).toEqual({ message: 'time limits set successfully' });
    expect(worker.timeLimit('dash.add')).toBe(20);
    expect((await post('/api/task/revoke/some-task-id?terminate=true')).body).toEqual({ message: "Revoked 'some-task-id'" });
    await waitFor('the revoke to reach the worker', () => worker.state.revoked.has('some-task-id') || undefined);
    expect((await post('/api/worker/pool/grow/nobody@nowhere')).status).toBe(404);
  });

  it('GET /api/queues/length, /metrics (Flower\'s names) and /healthcheck', async () => {
    const { body } = await get('/api/queues/length');
    expect((body as { active_queues: Array<{ name: string; messages: number }> }).active_queues).toEqual([{ name: queue, messages: 0 }]);
    const metrics = String((await get('/metrics')).body);
    expect(metrics).toMatch(new RegExp(`flower_events_total\\{worker="${hostname.replace('.', '\\.')}",type="task-succeeded",task="dash.add"\\} \\d+`));
    expect(metrics).toContain(`flower_worker_online{worker="${hostname}"} 1`);
    expect(metrics).toContain('flower_task_runtime_seconds_bucket');
    expect(metrics).toContain('flower_worker_number_of_currently_executing_tasks');
    expect(metrics).toContain(`kq_queue_length{queue="${queue}"} 0`);
    // ... and it is valid Prometheus text, as a scraper reads it
    const families = parsePrometheusTextFormat(metrics);
    expect(families.map((family) => family.name)).toEqual(expect.arrayContaining(['flower_events_total', 'flower_task_runtime_seconds', 'flower_worker_online', 'kq_queue_length']));
    expect(await get('/healthcheck')).toEqual({ status: 200, body: 'OK' });
  });

  it('delayed messages Redis holds (etaStrategy broker: the delayed set) are counted by queue, in the API and the queue rows', async () => {
    const sender = new App('dash-eta', { broker: REDIS, taskDefaultQueue: queue, etaStrategy: 'broker' });
    try {
      const later = await sender.sendTask('dash.add', [1, 2], {}, { countdown: 2 });
      const { body } = await get('/api/queues/length');
      const delayed = (body as { delayed: { total: number; by_queue?: Record<string, number> } }).delayed;
      expect(delayed.by_queue?.[queue]).toBe(1);
      expect(delayed.total).toBeGreaterThanOrEqual(1);
      const rows = ((await get('/dashboard/overview')).body as { queues: { rows: Array<{ name: string; delayed: number | null }>; delayed: unknown } }).queues;
      expect(rows.rows.find((row) => row.name === queue)?.delayed).toBe(1);
      expect(rows.delayed).toEqual({ total: delayed.total, byQueue: true });
      // due, it leaves the delayed set for its queue and runs
      await waitFor('the task to run', () => dashboard.state.task(later.id)?.state === 'SUCCESS' || undefined, 10_000);
      await dashboard.sampleQueues();
      expect(dashboard.state.delayed?.byQueue?.[queue]).toBeUndefined();
    } finally {
      await sender.close();
    }
  });

  it('queue rows: messages waiting by priority step, and a queue nobody consumes any more stays in view', async () => {
    await dashboard.sampleQueues(); // the queue is known while the worker consumes it
    expect((await post(`/api/worker/queue/cancel-consumer/${hostname}?queue=${queue}`)).body).toEqual({ message: `no longer consuming from ${queue}` });
    await dashboard.inspector.inspect();
    // Kombu's steps: priority 0 → step 0, priority 9 → step 9 (lower serves first)
    for (const priority of [0, 0, 9]) await app.sendTask('dash.add', [1, 1], {}, { priority });
    await dashboard.sampleQueues();
    const { body } = await get('/dashboard/overview');
    const row = (body as { queues: { rows: Array<{ name: string; messages: number; steps: Array<{ step: number; messageCount: number }>; consumers: string[] }> } }).queues.rows.find((r) => r.name === queue);
    expect(row?.messages).toBe(3);
    expect(row?.consumers).toEqual([]);
    expect(row?.steps.filter((s) => s.messageCount > 0)).toEqual([
      { step: 0, messageCount: 2 },
      { step: 9, messageCount: 1 },
    ]);
    expect((await post(`/api/worker/queue/add-consumer/${hostname}?queue=${queue}`)).body).toEqual({ message: `add consumer ${queue}` });
    await waitFor('the backlog to drain', async () => ((await dashboard.sampleQueues()).find((q) => q.name === queue)?.messages === 0 ? true : undefined));
  });

  it('dead letters: a task no worker knows is kept with its reason, listed, sent back, and purged', async () => {
    const unknown = await app.sendTask('dash.nobody_has_this');
    const letter = await waitFor('the rejected message', async () => {
      const { body } = await get(`/dashboard/dead-letters?queue=${queue}`);
      return (body as Array<Record<string, unknown>>).find((entry) => entry['task_id'] === unknown.id);
    });
    expect(letter).toMatchObject({ queue, task: 'dash.nobody_has_this' });
    expect(String(letter['reason'])).toMatch(/NotRegistered|not registered/i);
    expect((await post(`/dashboard/dead-letters/requeue?ids=${String(letter['id'])}`)).body).toEqual({ message: 'Sent 1 message(s) back to their queue.' });
    // back in its queue, the worker rejects it again: kept once more
    await waitFor('the second rejection', async () => ((await get(`/dashboard/dead-letters?queue=${queue}`)).body as unknown[]).length === 1 || undefined);
    expect((await post(`/dashboard/dead-letters/purge?queue=${queue}`)).body).toEqual({ message: 'Purged 1 rejected message(s).' });
    expect((await get(`/dashboard/dead-letters?queue=${queue}`)).body).toEqual([]);
  });

  it.skipIf(!python)('a Python Celery 5.2.6 worker in the fleet shows as a worker, and its tasks as tasks', async () => {
    py = startPythonWorker(`py@${ns}`, { KQ_INTEROP_BROKER: REDIS, KQ_INTEROP_BACKEND: REDIS, KQ_INTEROP_PY_QUEUE: `${ns}.py`, KQ_INTEROP_NAMESPACE: ns, KQ_INTEROP_EVENT_EXCHANGE: `${ns}.ev` }, ['-E']);
    const info = await waitFor('the Python worker in /api/workers', async () => {
      const { body } = await get(`/api/workers?refresh=1&workername=py@${ns}`).catch(() => ({ body: {} }));
      return (body as Record<string, Record<string, unknown>>)[`py@${ns}`]?.['stats'] ? body : undefined;
    }, 30_000);
    expect((info as Record<string, Record<string, unknown>>)[`py@${ns}`]?.['registered']).toEqual(expect.arrayContaining(['interop.py_add']));
    const result = await app.sendTask('interop.py_add', [2, 40], {}, { queue: `${ns}.py` });
    expect(await result.get({ timeout: 20_000 })).toBe(42);
    const task = await waitFor('the Python task in /api/tasks', () => dashboard.state.task(result.id)?.state === 'SUCCESS' ? dashboard.state.task(result.id) : undefined);
    expect(task).toMatchObject({ name: 'interop.py_add', worker: `py@${ns}`, result: '42' });
  }, 60_000);

  it('a URL prefix serves everything under it: the page (its links relative), its files, the API', async () => {
    const prefixed = new Dashboard({ app: new App('dash-prefix', { broker: REDIS, controlExchange: ns, eventExchange: `${ns}.ev` }), port: 0, logger: quiet, urlPrefix: 'flower/' });
    const base = await prefixed.start();
    try {
      expect(base).toMatch(/\/flower$/);
      const bare = await fetch(base, { redirect: 'manual' });
      expect([bare.status, bare.headers.get('location')]).toEqual([302, '/flower/']);
      const html = await (await fetch(`${base}/`)).text();
      expect(html).toContain('src="static/app.js"');
      expect(html).toContain('<base href="./">');
      // Flower's page paths serve the page, its base leading back to the prefix (relative: a stripping proxy works too)
      for (const [path, pageBase] of [['/workers', './'], ['/tasks', './'], ['/broker', './'], [`/worker/${encodeURIComponent(hostname)}`, '../'], ['/task/some-id', '../'], ['/tasks/', '../']] as const) {
        const page = await fetch(`${base}${path}`);
        expect([path, page.status, page.headers.get('content-type')]).toEqual([path, 200, 'text/html; charset=utf-8']);
        expect(await page.text()).toContain(`<base href="${pageBase}">`);
      }
      expect((await fetch(`${base}/static/favicon.svg`)).headers.get('content-type')).toBe('image/svg+xml');
      expect((await fetch(`${base}/static/app.js`)).status).toBe(200);
      expect((await fetch(`${base}/api/workers`)).status).toBe(200);
      expect(await (await fetch(`${base}/healthcheck`)).text()).toBe('OK');
      expect((await fetch(base.replace(/\/flower$/, '/api/workers'))).status).toBe(404);
    } finally {
      await prefixed.close();
      await prefixed.app.close();
    }
  });

  it('closes while a page is open: its live feed is ended rather than waited for', async () => {
    const watched = new Dashboard({ app: new App('dash-live', { broker: REDIS, controlExchange: ns, eventExchange: `${ns}.ev` }), port: 0, logger: quiet });
    const base = await watched.start();
    try {
      const feed = await fetch(`${base}/api/live`);
      const reader = (feed.body as ReadableStream<Uint8Array>).getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain('event: change');
      const closed = watched.close().then(() => 'closed');
      expect(await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 5000, 'still open after 5 s'))])).toBe('closed');
      expect((await reader.read()).done).toBe(true);
    } finally {
      await watched.close();
      await watched.app.close();
    }
  });

  it('basic auth: without the pair 401 (health check still open), with it 200', async () => {
    const guarded = new Dashboard({ app: new App('dash-auth', { broker: REDIS, controlExchange: ns, eventExchange: `${ns}.ev` }), port: 0, logger: quiet, basicAuth: ['admin:s3cret'] });
    const guardedUrl = await guarded.start();
    try {
      expect((await fetch(`${guardedUrl}/api/workers`)).status).toBe(401);
      expect((await fetch(`${guardedUrl}/dashboard/task/some-id/resend`, { method: 'POST' })).status).toBe(401);
      expect((await fetch(`${guardedUrl}/healthcheck`)).status).toBe(200);
      const authorised = await fetch(`${guardedUrl}/api/workers`, { headers: { authorization: `Basic ${Buffer.from('admin:s3cret').toString('base64')}` } });
      expect(authorised.status).toBe(200);
    } finally {
      await guarded.close();
      await guarded.app.close();
    }
  });
});

const amqpUp = await brokerReachable('amqp');
describe.skipIf(!amqpUp)('the dashboard on RabbitMQ', () => {
  const ns = `kqdashmq${randomUUID().slice(0, 8)}`;
  const queue = `${ns}.q`;
  let app: App;
  let worker: Worker;
  let dashboard: Dashboard;

  beforeAll(async () => {
    app = new App('dash-mq', { broker: brokerUrls.amqp, backend: 'rpc://', taskDefaultQueue: queue, controlExchange: ns, eventExchange: `${ns}.ev` });
    app.task('dash.add', (_ctx, x: number, y: number) => x + y);
    worker = app.worker({ queues: [queue], hostname: `mq@${ns}`, logger: quiet, cluster: { taskEvents: true, heartbeatInterval: 0.5, mingle: false, gossip: false } });
    await worker.start();
    dashboard = new Dashboard({ app: new App('dash', { broker: brokerUrls.amqp, controlExchange: ns, eventExchange: `${ns}.ev` }), port: 0, logger: quiet, inspectTimeoutMs: 500, deadLetterQueues: [`${ns}.dlq`] });
    await dashboard.start();
  });
  afterAll(async () => {
    await dashboard?.close();
    await dashboard?.app.close();
    await worker?.stop();
    for (const name of [queue, `${ns}.dlq`, `${ns}.src`]) await app?.connection.ensure((channel) => channel.deleteQueue(name)).catch(() => undefined);
    await app?.close();
  });

  it('sees the worker and its task, and reads the queue length from the broker', async () => {
    expect(await (await app.sendTask('dash.add', [1, 2])).get({ timeout: 10_000 })).toBe(3);
    await dashboard.inspector.inspect();
    expect(dashboard.state.inspected.get(`mq@${ns}`)?.['registered']).toEqual(expect.arrayContaining(['dash.add']));
    await waitFor('the task events', () => dashboard.state.queryTasks().some((task) => task.name === 'dash.add' && task.state === 'SUCCESS') || undefined);
    expect(await dashboard.sampleQueues()).toEqual([{ name: queue, messages: 0 }]);
  });

  it('dead letters: the configured dead-letter queue is read (x-death: where from, why), sent back, purged; a missing one is 400', async () => {
    const dlq = `${ns}.dlq`;
    const source = `${ns}.src`;
    const call = async (path: string, method = 'GET'): Promise<{ status: number; body: unknown }> => {
      const response = await fetch(`${dashboard.url}${path}`, { method });
      return { status: response.status, body: (await response.json()) as unknown };
    };
    // A task queue that dead-letters to dlq, and a message a consumer rejected there (what a worker does to an unknown task).
    const rejectOne = async (id: string): Promise<void> =>
      app.connection.ensure(async (channel) => {
        await channel.publish('', source, { body: Buffer.from('[[], {}, {}]'), contentType: 'application/json', contentEncoding: 'utf-8', headers: { task: 'dash.nobody', id }, properties: { deliveryMode: 2 } });
        const delivery = await waitFor('the message', async () => (await channel.get(source)) ?? undefined);
        await delivery.reject('unknown task');
      });
    await app.connection.ensure(async (channel) => {
      await channel.declareQueue(new Queue(dlq, { durable: false }));
      await channel.declareQueue(new Queue(source, { durable: false, deadLetterExchange: '', deadLetterRoutingKey: dlq }));
    });
    await rejectOne('dead-1');
    const letters = await waitFor('the dead letter', async () => {
      const { body } = await call('/dashboard/dead-letters');
      return (body as unknown[]).length === 1 ? (body as Array<Record<string, unknown>>) : undefined;
    });
    expect(letters[0]).toMatchObject({ id: 'dead-1', queue: source, reason: 'rejected', task: 'dash.nobody', task_id: 'dead-1', dead_letter_queue: dlq });
    // listing is a look, not a take
    expect((await call(`/dashboard/dead-letters?queue=${dlq}`)).body).toHaveLength(1);
    expect((await call(`/dashboard/dead-letters/requeue?ids=dead-1&queue=${dlq}`, 'POST')).body).toEqual({ message: 'Sent 1 message(s) back to their queue.' });
    await waitFor('it back in its queue', async () => (await app.connection.ensure((channel) => channel.checkQueue(source))).messageCount === 1 || undefined);
    await app.connection.ensure((channel) => channel.purgeQueue(source));
    await rejectOne('dead-2');
    await waitFor('the second dead letter', async () => ((await call('/dashboard/dead-letters')).body as unknown[]).length === 1 || undefined);
    expect((await call('/dashboard/dead-letters/purge', 'POST')).body).toEqual({ message: 'Purged 1 rejected message(s).' });
    expect((await call('/dashboard/dead-letters')).body).toEqual([]);
    const missing = await call(`/dashboard/dead-letters?queue=${ns}.no-such-queue`);
    expect(missing.status).toBe(400);
    expect(String((missing.body as { error: string }).error)).toContain(`${ns}.no-such-queue`);
  }, 30_000);

  it("counts the delayed messages RabbitMQ's delay ladder holds (all queues together: no split by queue)", async () => {
    const sender = new App('dash-mq-eta', { broker: brokerUrls.amqp, taskDefaultQueue: queue, etaStrategy: 'broker' });
    try {
      const later = await sender.sendTask('dash.add', [2, 2], {}, { countdown: 2 });
      const delayed = await waitFor('the message in the ladder', async () => {
        const body = (await (await fetch(`${dashboard.url}/api/queues/length`)).json()) as { delayed: { total: number; by_queue?: unknown } | null };
        return body.delayed && body.delayed.total >= 1 ? body.delayed : undefined;
      });
      expect(delayed.by_queue).toBeUndefined();
      expect(overview(dashboard).queues).toMatchObject({ rows: [{ name: queue, delayed: null }], delayed: { byQueue: false } });
      await waitFor('the task to run', () => dashboard.state.task(later.id)?.state === 'SUCCESS' || undefined, 15_000);
    } finally {
      await sender.close();
    }
  }, 30_000);
});
