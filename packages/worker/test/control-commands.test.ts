// Every remote-control command of the cluster steps, through a real Mailbox on the memory transport, checked
// against Celery's argument and reply shapes (docs/wire.md#remote-control-pidbox; replies as captured from Celery
// 5.2.6).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app/app';
import { clusterOf } from '../src/cluster/cluster-context';
import { clusterSteps } from '../src/cluster/cluster-steps';
import { queueControlOf } from '../src/cluster/queue-control';
import type { ReceivedEvent } from '../src/events/event';
import { EventReceiver } from '../src/events/event-receiver';
import { encodeTaskMessage } from '../src/protocol/index';
import type { Worker } from '../src/runtime/worker';
import { memoryApp, memoryBrokerName, recordingLogger, sleep, waitFor } from './fixtures/cluster/helpers';

describe('remote-control commands of a kq worker', () => {
  let app: App;
  let client: App;
  let worker: Worker;
  let events: ReceivedEvent[];
  let receiver: EventReceiver;
  const log = recordingLogger();
  const node = 'ctl@test';
  let release: (() => void) | undefined;

  /** Sends a command to our worker and returns its reply value. */
  const call = async (method: string, args: Record<string, unknown> = {}): Promise<unknown> => {
    const replies = await client.control.broadcast(method, { arguments: args, reply: true, destination: [node], timeout: 2000 });
    expect(replies).toHaveLength(1);
    return (replies[0] as Record<string, unknown>)[node];
  };

  beforeAll(async () => {
    const broker = memoryBrokerName('control');
    app = memoryApp(broker, { etaStrategy: 'worker', backend: `memory://${broker}` });
    client = memoryApp(broker);
    app.task('add', (_ctx, x: number, y: number) => x + y, { queue: 'celery' });
    app.task('sleepy', (ctx) => new Promise<string>((resolve) => {
      release = () => resolve('released');
      ctx.signal.addEventListener('abort', () => resolve('aborted'));
    }));
    app.task('boom', () => {
      throw new Error('no');
    });
    events = [];
    receiver = new EventReceiver(client.connection, { clock: client.clock, handlers: { '*': (e) => events.push(e) } });
    await receiver.start();
    worker = app.worker({ hostname: node, concurrency: 1, logger: log.logger, steps: clusterSteps({ heartbeatInterval: 60 }) });
    await worker.start();
  });

  afterAll(async () => {
    release?.();
    await worker.stop();
    await receiver.close();
    await app.close();
    await client.close();
  });

  it('ping, clock (the app clock, forwarded by every control message) and an unknown command', async () => {
    expect(await call('ping')).toEqual({ ok: 'pong' });
    const first = (await call('clock')) as { clock: number };
    const second = (await call('clock')) as { clock: number };
    expect(second.clock).toBeGreaterThan(first.clock);
    expect(second.clock).toBeLessThanOrEqual(app.clock.value);
    expect(await call('no_such_cmd')).toEqual({ error: "KeyError('no_such_cmd')" });
    // The pool's own commands stay, and count as control messages for the clock too.
    const before = app.clock.value;
    expect(await call('pool_grow', { n: 1 })).toEqual({ ok: 'pool will grow' });
    expect(await call('pool_shrink', { n: 1 })).toEqual({ ok: 'pool will shrink' });
    expect(app.clock.value).toBe(before + 2);
  });

  it('stats: Celery keys in order, clock as a string, counters, broker description and prefetch', async () => {
    const result = await app.sendTask('add', [1, 2]);
    await result.get({ timeout: 5000 });
    const stats = (await call('stats')) as Record<string, unknown>;
    expect(Object.keys(stats)).toEqual(['total', 'pid', 'clock', 'uptime', 'pool', 'broker', 'prefetch_count', 'rusage']);
    expect(stats['total']).toEqual({ add: 1 });
    expect(stats['pid']).toBe(process.pid);
    expect(typeof stats['clock']).toBe('string');
    expect(Number(stats['clock'])).toBeGreaterThan(0);
    expect(stats['prefetch_count']).toBe(worker.prefetchCount);
    expect(stats['pool']).toMatchObject({ 'max-concurrency': 1 });
    expect(stats['broker']).toMatchObject({ transport: 'memory', insist: false, heartbeat: 120, failover_strategy: 'round-robin', alternates: [] });
    expect(stats['rusage']).toMatchObject({ utime: expect.any(Number), maxrss: expect.any(Number) });
  });

  it('active, reserved, query_task and scheduled list the requests with Request.info()', async () => {
    const running = await app.sendTask('sleepy', [], {}, { taskId: 'run-1' });
    const waiting = await app.sendTask('add', [5, 5], {}, { taskId: 'wait-1' });
    const later = await app.sendTask('add', [7, 7], {}, { taskId: 'eta-1', countdown: 60 });
    await waitFor(() => worker.state.active.has('run-1') && worker.scheduled().length === 1 && worker.state.reserved.size === 3, 5000, 'three requests held');

    const active = (await call('active')) as Array<Record<string, unknown>>;
    expect(active).toHaveLength(1);
    expect(Object.keys(active[0] as object)).toEqual(['id', 'name', 'args', 'kwargs', 'type', 'hostname', 'time_start', 'acknowledged', 'delivery_info', 'worker_pid']);
    expect(active[0]).toMatchObject({ id: 'run-1', name: 'sleepy', args: [], kwargs: {}, type: 'sleepy', hostname: node, acknowledged: true, worker_pid: process.pid });
    expect((await call('active', { safe: true })) as unknown[]).toMatchObject([{ args: '()', kwargs: '{}' }]);

    const reserved = (await call('reserved')) as Array<Record<string, unknown>>;
    expect(reserved.map((r) => r['id'])).toEqual(['wait-1']);
    expect(reserved[0]).toMatchObject({ time_start: null, acknowledged: false, worker_pid: null });
    // A virtual transport marks only restored messages: Celery 5.5+ shows a first delivery's `redelivered` as False
    // (what kq answers when it knows of no Python worker)...
    const golden = { exchange: '', routing_key: 'celery', priority: 0, redelivered: false };
    expect(active[0]?.['delivery_info']).toEqual(golden);
    expect(Object.keys(active[0]?.['delivery_info'] as object)).toEqual(Object.keys(golden));
    expect(reserved[0]?.['delivery_info']).toEqual(golden);
    // ...and 5.2.6 as None (wire-samples/redis-5.2.6-inspect-control-replies.txt), when a 5.2 worker is in the fleet.
    const gossip = clusterOf(worker)?.gossip;
    gossip?.state.event({ type: 'worker-heartbeat', hostname: 'py52@test', timestamp: Date.now() / 1000, local_received: Date.now() / 1000, clock: 1, utcoffset: 0, pid: 1, freq: 60, sw_ident: 'py-celery', sw_ver: '5.2.6' });
    expect(((await call('reserved')) as Array<Record<string, unknown>>)[0]?.['delivery_info']).toEqual({ ...golden, redelivered: null });
    gossip?.state.workers.delete('py52@test');

    const scheduled = (await call('scheduled')) as Array<Record<string, unknown>>;
    expect(scheduled).toHaveLength(1);
    expect(scheduled[0]).toMatchObject({ priority: 6, request: { id: 'eta-1', name: 'add', args: [7, 7], delivery_info: { redelivered: false } } });
    expect(String(scheduled[0]?.['eta'])).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$/);

    expect(await call('query_task', { ids: ['run-1', 'wait-1', 'unknown'] })).toMatchObject({
      'run-1': ['active', { id: 'run-1' }],
      'wait-1': ['reserved', { id: 'wait-1' }],
    });
    expect(await call('query_task', { ids: 'run-1' })).toMatchObject({ 'run-1': ['active', {}] });

    // revoke + terminate aborts the running task's signal; the queued one then runs.
    expect(await call('revoke', { task_id: 'run-1', terminate: true, signal: 'SIGKILL' })).toEqual({ ok: 'terminate: run-1' });
    expect(await running.get({ timeout: 5000, propagate: false })).toMatchObject({ exc_type: 'TaskRevokedError' });
    expect(await waiting.get({ timeout: 5000 })).toBe(10);
    // No Python peer known: answered as the newest Celery (5.6, like 5.5) does, with the ids as a Python set.
    expect(await call('revoke', { task_id: ['eta-1'] })).toEqual({ ok: "tasks {'eta-1'} flagged as revoked" });
    expect(later.id).toBe('eta-1');
  });

  it('revoke takes a string or a list, terminate checks its signal, revoked lists them oldest first', async () => {
    expect(await call('revoke', { task_id: 'r-1' })).toEqual({ ok: "tasks {'r-1'} flagged as revoked" });
    // A Celery 5.2 worker in the fleet (its heartbeat's sw_ver): answered as 5.2 does, the ids joined.
    const gossip = clusterOf(worker)?.gossip;
    expect(gossip).toBeDefined();
    gossip?.state.event({ type: 'worker-heartbeat', hostname: 'py@test', timestamp: Date.now() / 1000, local_received: Date.now() / 1000, clock: 1, utcoffset: 0, pid: 1, freq: 60, sw_ident: 'py-celery', sw_ver: '5.2.6' });
    expect(await call('revoke', { task_id: ['r-2', 'r-3', 'r-2'], terminate: false, signal: 'SIGTERM' })).toEqual({ ok: 'tasks r-2, r-3 flagged as revoked' });
    gossip?.state.workers.delete('py@test');
    expect(await call('revoke', { task_id: ['r-4'], terminate: true })).toEqual({ ok: 'terminate: tasks unknown' });
    expect(await call('terminate', { signal: 'term', task_id: 'r-5' })).toEqual({ error: "TypeError('signal name must be uppercase string.')" });
    expect(await call('terminate', { signal: 'NOPE', task_id: 'r-5' })).toEqual({ error: `AttributeError("module 'signal' has no attribute 'SIGNOPE'")` });
    // As in Python, the ids are revoked before the signal is looked at.
    const revoked = (await call('revoked')) as string[];
    expect(revoked.slice(-5)).toEqual(['r-1', 'r-2', 'r-3', 'r-4', 'r-5']);
  });

  it('revoke_by_stamped_headers revokes the tasks stamped with a value, queued or running (Celery 5.3+)', async () => {
    expect(await call('revoke_by_stamped_headers', { headers: { monitoring_id: ['m-1'] } })).toEqual({
      ok: "headers {'monitoring_id': ['m-1']} flagged as revoked, but not terminated",
    });
    // From the command line: key=value strings.
    expect(await call('revoke_by_stamped_headers', { headers: ['batch=b-1'], terminate: false })).toEqual({ ok: "headers {'batch': 'b-1'} flagged as revoked, but not terminated" });
    const channel = await app.connection.channel();
    // Stamped as a Celery 5.3+ client stamps (stamped_headers + stamps headers), published raw.
    await channel.publish('', 'celery', encodeTaskMessage({ name: 'add', id: 'st-1', args: [1, 1], stamps: { monitoring_id: 'm-1' } }));
    await channel.publish('', 'celery', encodeTaskMessage({ name: 'add', id: 'st-2', args: [1, 1], stamps: { monitoring_id: ['x', 'm-1'] } }));
    await channel.publish('', 'celery', encodeTaskMessage({ name: 'add', id: 'st-3', args: [2, 2], stamps: { monitoring_id: 'm-2' } }));
    await channel.publish('', 'celery', encodeTaskMessage({ name: 'add', id: 'st-4', args: [3, 3], stamps: { batch: 4242 } }));
    for (const id of ['st-1', 'st-2']) expect(await (await app.asyncResult(id)).get({ timeout: 5000, propagate: false })).toMatchObject({ exc_type: 'TaskRevokedError' });
    expect(await (await app.asyncResult('st-3')).get({ timeout: 5000 })).toBe(4);
    expect(await (await app.asyncResult('st-4')).get({ timeout: 5000 })).toBe(6);

    // terminate: a running task stamped with the value is aborted; Python's reply shows what matched.
    await channel.publish('', 'celery', encodeTaskMessage({ name: 'sleepy', id: 'st-5', stamps: { run: 'r-9' } }));
    await waitFor(() => worker.state.active.has('st-5'), 5000, 'st-5 running');
    expect(await call('revoke_by_stamped_headers', { headers: { run: 'r-9' }, terminate: true, signal: 'SIGKILL' })).toEqual({
      ok: "headers defaultdict(<class 'set'>, {'run': {'r-9'}}) revoked",
    });
    expect(await (await app.asyncResult('st-5')).get({ timeout: 5000, propagate: false })).toMatchObject({ exc_type: 'TaskRevokedError' });
    expect(await call('revoke_by_stamped_headers', { headers: { run: 'nobody' }, terminate: true })).toEqual({ ok: "headers {'run': 'nobody'} were not terminated" });
    worker.state.revokedStamps.clear();
  });

  it('registered, rate_limit and time_limit', async () => {
    expect(await call('registered')).toEqual(['add', 'boom', 'sleepy']);
    expect(await call('rate_limit', { task_name: 'add', rate_limit: '10/m' })).toEqual({ ok: 'new rate limit set successfully' });
    expect(await call('registered')).toEqual(['add [rate_limit=10/m]', 'boom', 'sleepy']);
    expect(await call('registered', { taskinfoitems: ['queue', 'rate_limit'] })).toEqual(['add [queue=celery rate_limit=10/m]', 'boom', 'sleepy']);
    expect(await call('rate_limit', { task_name: 'add', rate_limit: '' })).toEqual({ ok: 'rate limit disabled successfully' });
    expect(await call('rate_limit', { task_name: 'nope', rate_limit: '1/s' })).toEqual({ error: 'unknown task' });
    expect(String(((await call('rate_limit', { task_name: 'add', rate_limit: 'fast' })) as { error: string }).error)).toMatch(/^Invalid rate limit string: ValueError\(/);
    expect(await call('time_limit', { task_name: 'add', soft: 10, hard: 20 })).toEqual({ ok: 'time limits set successfully' });
    expect([worker.softTimeLimit('add'), worker.timeLimit('add')]).toEqual([10, 20]);
    expect(await call('time_limit', { task_name: 'nope', soft: 1 })).toEqual({ error: 'unknown task' });
  });

  it("active_queues in kombu's Queue.as_dict shape", async () => {
    expect(await call('active_queues')).toEqual([
      {
        name: 'celery',
        exchange: { name: 'celery', type: 'direct', arguments: null, durable: true, passive: false, auto_delete: false, delivery_mode: null, no_declare: false },
        routing_key: 'celery',
        queue_arguments: null,
        binding_arguments: null,
        consumer_arguments: null,
        durable: true,
        exclusive: false,
        auto_delete: false,
        no_ack: false,
        alias: null,
        bindings: [],
        no_declare: null,
        expires: null,
        message_ttl: null,
        max_length: null,
        max_length_bytes: null,
        max_priority: null,
      },
    ]);
  });

  it('add_consumer and cancel_consumer change the queues consumed (when the worker can)', async () => {
    if (!queueControlOf(worker)) {
      expect(await call('add_consumer', { queue: 'extra' })).toEqual({ error: 'this worker cannot change its queues while running' });
      return;
    }
    expect(await call('add_consumer', { queue: 'extra', exchange: null, exchange_type: 'direct', routing_key: null })).toEqual({ ok: 'add consumer extra' });
    expect(((await call('active_queues')) as Array<{ name: string }>).map((q) => q.name)).toEqual(['celery', 'extra']);
    const result = await app.sendTask('add', [20, 22], {}, { queue: 'extra' });
    expect(await result.get({ timeout: 5000 })).toBe(42);
    expect(await call('cancel_consumer', { queue: 'extra' })).toEqual({ ok: 'no longer consuming from extra' });
    expect(((await call('active_queues')) as Array<{ name: string }>).map((q) => q.name)).toEqual(['celery']);
  });

  it('hello: merges the caller’s revoked set, answers its own (float timestamps) and the forwarded clock; null to itself', async () => {
    const before = app.clock.value;
    // Revoked timestamps are the host's monotonic clock (Python's time.monotonic(), i.e. uptime): a fixed small
    // value would already be expired (and purged) on a machine that has been up for more than 3 hours.
    const stamp = Math.floor(Number(process.hrtime.bigint()) / 1e9) - 0.75;
    const reply = (await call('hello', { from_node: 'other@test', revoked: { 'hello-rev': [stamp, 'hello-rev'] } })) as { revoked: Record<string, [number, string]>; clock: number };
    expect(reply.clock).toBeGreaterThan(before);
    expect(reply.revoked['hello-rev']).toEqual([stamp, 'hello-rev']);
    for (const [id, [timestamp, item]] of Object.entries(reply.revoked)) {
      expect(item).toBe(id);
      expect(Number.isInteger(timestamp)).toBe(false);
    }
    expect(worker.state.revoked.has('hello-rev')).toBe(true);
    expect(await call('hello', { from_node: node, revoked: {} })).toBeNull();
    const bad = (await call('hello', { from_node: 'other@test', revoked: { x: ['not a time', 'x'] } })) as { error: string };
    expect(bad.error).toBe(`ValueError("Expecting float timestamp, got type <class 'str'> with value: not a time")`);
  });

  it('heartbeat: replies null and sends a worker-heartbeat with freq 5 and only the software info', async () => {
    const before = events.length;
    expect(await call('heartbeat')).toBeNull();
    await waitFor(() => events.slice(before).some((e) => e.type === 'worker-heartbeat' && e.hostname === node), 5000, 'the heartbeat');
    const beat = events.slice(before).find((e) => e.type === 'worker-heartbeat') as ReceivedEvent;
    expect(Object.keys(beat)).toEqual(['hostname', 'utcoffset', 'pid', 'clock', 'freq', 'sw_ident', 'sw_ver', 'sw_sys', 'timestamp', 'type', 'local_received']);
    expect(beat['freq']).toBe(5);
  });

  it('memsample, memdump, objgraph and pool_restart answer as a Python worker does', async () => {
    const sample = await call('memsample');
    expect(sample).toMatch(/^\d+(\.\d+)?(b|KB|MB|GB)$/);
    await call('memsample');
    const dump = (await call('memdump')) as string;
    expect(dump).toMatch(/^- rss \(sample\):\n- {4}> \S+,\n- {4}> \S+,\n- rss \(end\): \S+\.\n$/);
    expect(await call('memdump')).toMatch(/^- rss \(end\): \S+\.\n$/); // the samples were cleared
    expect(await call('objgraph')).toEqual({ error: "ImportError('Requires the objgraph library')" });
    expect(await call('pool_restart')).toEqual({ error: "ValueError('Pool restarts not enabled')" });
    app.conf.workerPoolRestarts = true;
    try {
      expect(await call('pool_restart')).toEqual({ ok: 'reload started' });
    } finally {
      app.conf.workerPoolRestarts = false;
    }
  });

  it('conf, report and disable_events', async () => {
    const conf = (await call('conf')) as Record<string, unknown>;
    expect(conf).toMatchObject({ broker_url: expect.stringMatching(/^memory:\/\//), eta_strategy: 'worker' });
    expect(conf).not.toHaveProperty('task_default_queue');
    expect(await call('conf', { with_defaults: true })).toMatchObject({ task_default_queue: 'celery', control_exchange: 'celery' });
    expect(String(((await call('report')) as { ok: string }).ok)).toMatch(/software -> kq:\S+ node:/);
    // Without -E the dispatcher sends the worker group only: task events are already off.
    expect(await call('disable_events')).toEqual({ ok: 'task events already disabled' });
  });

  it('election when alone: this worker wins without asking anyone (a lone Python worker would crash)', async () => {
    const before = events.length;
    await client.control.broadcast('election', { arguments: { id: 'e-1', topic: 'nothing', action: null }, reply: false, destination: [node] });
    await waitFor(() => log.messages().some((m) => m.includes('I won the election "e-1"')), 5000, 'the election');
    await sleep(50);
    expect(events.slice(before).filter((e) => e.type.startsWith('worker-elect'))).toEqual([]);
  });

  it('shutdown: no reply, the worker stops warm', async () => {
    const replies = await client.control.broadcast('shutdown', { reply: true, destination: [node], timeout: 300 });
    expect(replies).toEqual([]);
    await waitFor(() => !worker.isRunning, 5000, 'the worker to stop');
    expect(log.messages()).toContain('Got shutdown from remote');
  });
});
