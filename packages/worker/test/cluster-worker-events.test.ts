// The worker side of events (docs/wire.md#events): online/heartbeat/offline, task events with Celery's fields, groups,
// and event publishing that never breaks the worker. On the memory transport, with a monitor on its own app (own
// clock).
import { Exchange, Queue } from '@kq/core';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../src/app/app';
import { clusterSteps } from '../src/cluster/cluster-steps';
import type { ClusterOptions } from '../src/cluster/cluster-options';
import type { ReceivedEvent } from '../src/events/event';
import { EventReceiver } from '../src/events/event-receiver';
import type { Worker } from '../src/runtime/worker';
import { memoryApp, memoryBrokerName, recordingLogger, waitFor } from './fixtures/cluster/helpers';

describe('worker events', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  async function fleet(options: ClusterOptions, config: Parameters<typeof memoryApp>[1] = {}) {
    const broker = memoryBrokerName('cluster-events');
    const app = memoryApp(broker, config);
    app.task('add', (_ctx, x: number, y: number) => x + y);
    app.task(
      'boom',
      (_ctx, _why?: string) => {
        throw new RangeError('kaboom');
      },
      { params: ['why?'] },
    );
    const monitorApp = memoryApp(broker, config);
    const events: ReceivedEvent[] = [];
    const receiver = new EventReceiver(monitorApp.connection, { clock: monitorApp.clock, exchange: monitorApp.conf.eventExchange, handlers: { '*': (e) => events.push(e) } });
    await receiver.start();
    const log = recordingLogger();
    const worker = app.worker({ hostname: `kq-${broker}@test`, logger: log.logger, steps: clusterSteps(options) });
    cleanups.push(async () => {
      await worker.stop();
      await receiver.close();
      await app.close();
      await monitorApp.close();
    });
    await worker.start();
    return { app, worker, events, log, monitorApp };
  }

  const ofType = (events: ReceivedEvent[], type: string, hostname?: string): ReceivedEvent[] =>
    events.filter((e) => e.type === type && (hostname === undefined || e.hostname === hostname));

  it('announces itself online when ready, beats every interval and says offline on stop, in Celery field order', async () => {
    const { worker, events } = await fleet({ heartbeatInterval: 0.05 });
    await waitFor(() => ofType(events, 'worker-heartbeat', worker.hostname).length >= 2, 5000, 'two heartbeats');
    const online = ofType(events, 'worker-online', worker.hostname)[0] as ReceivedEvent;
    expect(Object.keys(online)).toEqual([
      'hostname', 'utcoffset', 'pid', 'clock', 'freq', 'active', 'processed', 'loadavg', 'sw_ident', 'sw_ver', 'sw_sys', 'timestamp', 'type', 'local_received',
    ]);
    expect(online).toMatchObject({ hostname: worker.hostname, pid: process.pid, freq: 0.05, active: 0, processed: 0, sw_ident: 'kq', type: 'worker-online' });
    expect(online.loadavg).toHaveLength(3);
    for (const value of online.loadavg as number[]) expect(Math.round(value * 100) / 100).toBe(value);
    const [first, second] = ofType(events, 'worker-heartbeat', worker.hostname) as [ReceivedEvent, ReceivedEvent];
    expect(first.clock).toBeGreaterThan(online.clock);
    expect(second.clock).toBeGreaterThan(first.clock);
    await worker.stop();
    await waitFor(() => ofType(events, 'worker-offline', worker.hostname).length === 1, 5000, 'worker-offline');
  });

  it('publishes events on the event exchange with Celery routing keys, hostname header and delivery mode 1', async () => {
    const broker = memoryBrokerName('cluster-events-raw');
    const app = memoryApp(broker, { workerSendTaskEvents: true });
    app.task('add', (_ctx, x: number, y: number) => x + y);
    const seen: Array<{ routingKey: string; headers: Record<string, unknown>; deliveryMode: unknown; body: unknown }> = [];
    const channel = await app.connection.channel();
    await channel.declareExchange(new Exchange('celeryev', { type: 'topic' }));
    await channel.declareQueue(new Queue('raw-events', { exchange: new Exchange('celeryev', { type: 'topic' }), routingKey: '#' }));
    await channel.consume({
      queues: ['raw-events'],
      noAck: true,
      onMessage: (delivery) =>
        seen.push({ routingKey: delivery.deliveryInfo.routingKey, headers: delivery.headers, deliveryMode: delivery.properties.deliveryMode, body: JSON.parse(delivery.body.toString()) }),
    });
    const worker = app.worker({ hostname: 'raw@test', logger: recordingLogger().logger, steps: clusterSteps({ heartbeatInterval: 60 }) });
    cleanups.push(async () => {
      await worker.stop();
      await app.close();
    });
    await worker.start();
    const result = await app.sendTask('add', [2, 3]);
    await waitFor(() => seen.some((m) => m.routingKey === 'task.succeeded'), 5000, 'task.succeeded');
    expect(result.id).toBeTruthy();
    expect(seen.map((m) => m.routingKey)).toEqual(['worker.online', 'task.received', 'task.started', 'task.succeeded']);
    for (const message of seen) {
      expect(message.headers).toEqual({ hostname: 'raw@test' });
      expect(message.deliveryMode).toBe(1);
    }
  });

  it('forwards the task lifecycle with Celery fields, each stamped by the app clock in order', async () => {
    const { app, worker, events } = await fleet({ heartbeatInterval: 60 }, { workerSendTaskEvents: true });
    const ok = await app.sendTask('add', [2, 3], {}, { taskId: 'ok-1' });
    const bad = await app.sendTask('boom', [], { why: 'test' }, { taskId: 'bad-1' });
    await waitFor(() => ofType(events, 'task-succeeded').length === 1 && ofType(events, 'task-failed').length === 1, 5000, 'both outcomes');
    const forTask = (id: string) => events.filter((e) => e['uuid'] === id);
    const [received, started, succeeded] = forTask(ok.id) as [ReceivedEvent, ReceivedEvent, ReceivedEvent];
    expect(received).toMatchObject({ type: 'task-received', hostname: worker.hostname, uuid: 'ok-1', name: 'add', args: '(2, 3)', kwargs: '{}', root_id: 'ok-1', parent_id: null, retries: 0, eta: null, expires: null });
    expect(Object.keys(received).slice(0, 4)).toEqual(['hostname', 'utcoffset', 'pid', 'clock']);
    expect(Object.keys(received).slice(4, 13)).toEqual(['uuid', 'name', 'args', 'kwargs', 'root_id', 'parent_id', 'retries', 'eta', 'expires']);
    expect(started).toMatchObject({ type: 'task-started', uuid: 'ok-1' });
    expect(succeeded).toMatchObject({ type: 'task-succeeded', uuid: 'ok-1', result: '5' });
    expect(typeof succeeded['runtime']).toBe('number');
    expect(received.clock).toBeLessThan(started.clock);
    expect(started.clock).toBeLessThan(succeeded.clock);
    const failed = forTask(bad.id).find((e) => e.type === 'task-failed') as ReceivedEvent;
    expect(failed['exception']).toBe("ValueError('kaboom')");
    expect(failed['traceback']).toContain('kaboom');
    expect(forTask(bad.id)[0]).toMatchObject({ kwargs: "{'why': 'test'}" });
  });

  it('sends only worker events without task events, until enable_events turns them on', async () => {
    const { app, worker, events, monitorApp } = await fleet({ heartbeatInterval: 60 });
    await app.sendTask('add', [1, 1]);
    await waitFor(() => worker.state.processed === 1, 5000, 'the task to run');
    await waitFor(() => ofType(events, 'worker-online').length === 1, 5000, 'worker-online');
    expect(events.filter((e) => e.type.startsWith('task-'))).toEqual([]);

    const enable = await monitorApp.control.broadcast('enable_events', { reply: true, destination: [worker.hostname] });
    expect(enable).toEqual([{ [worker.hostname]: { ok: 'task events enabled' } }]);
    const again = await monitorApp.control.broadcast('enable_events', { reply: true, destination: [worker.hostname] });
    expect(again).toEqual([{ [worker.hostname]: { ok: 'task events already enabled' } }]);
    await app.sendTask('add', [2, 2], {}, { taskId: 'after-enable' });
    await waitFor(() => events.some((e) => e.type === 'task-succeeded' && e['uuid'] === 'after-enable'), 5000, 'task events');

    const disable = await monitorApp.control.broadcast('disable_events', { reply: true, destination: [worker.hostname] });
    expect(disable).toEqual([{ [worker.hostname]: { ok: 'task events disabled' } }]);
  });

  it('keeps running tasks when events cannot be published, and says so in the log', async () => {
    const broker = memoryBrokerName('cluster-events-broken');
    const app: App = memoryApp(broker, { workerSendTaskEvents: true });
    app.task('add', (_ctx, x: number, y: number) => x + y);
    // Someone declared the event exchange with another type: every event publish now fails.
    await (await app.connection.channel()).declareExchange(new Exchange('celeryev', { type: 'direct' }));
    const log = recordingLogger();
    const worker: Worker = app.worker({ hostname: 'broken@test', logger: log.logger, steps: clusterSteps({ heartbeatInterval: 0.05 }) });
    cleanups.push(async () => {
      await worker.stop();
      await app.close();
    });
    await worker.start();
    for (let i = 0; i < 5; i++) await app.sendTask('add', [i, i]);
    await waitFor(() => worker.state.processed === 5, 5000, 'five tasks to run');
    await waitFor(() => log.messages().some((m) => m.startsWith('events: ')), 5000, 'an event error in the log');
    expect(log.messages().filter((m) => m.startsWith('events: '))).toHaveLength(1); // rate-limited
  });
});
