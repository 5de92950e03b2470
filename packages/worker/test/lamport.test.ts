// Lamport clocks in a kq fleet (docs/wire.md#lamport-clocks): the app clock and the mailbox clock are separate
// counters, every stamp and adjust in its table happens where Celery does it, and task events come out in causal order
// across workers once their clocks met through heartbeats. (The mixed kq + Python fleet is in
// cluster-interop-*.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app/app';
import { clusterOf } from '../src/cluster/cluster-context';
import { clusterSteps } from '../src/cluster/cluster-steps';
import { ClusterState, type ClusterTask } from '../src/events/cluster-state';
import type { ReceivedEvent } from '../src/events/event';
import { EventReceiver } from '../src/events/event-receiver';
import { sendTaskSentEvent } from '../src/events/task-sent';
import type { Worker } from '../src/runtime/worker';
import { memoryApp, memoryBrokerName, recordingLogger, sleep, waitFor } from './fixtures/cluster/helpers';

describe('Lamport clocks', () => {
  const broker = memoryBrokerName('lamport');
  const apps: App[] = [];
  const workers: Worker[] = [];
  let monitorApp: App;
  let monitor: EventReceiver;
  const state = new ClusterState();
  const seen: ReceivedEvent[] = [];

  const newApp = (): App => {
    const app = memoryApp(broker, { workerSendTaskEvents: true });
    app.task('add', (_ctx, x: number, y: number) => x + y);
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    for (const [i, hostname] of ['a@lamport', 'b@lamport'].entries()) {
      const app = newApp();
      app.clock.adjust(i * 1000); // very different starting clocks
      const worker = app.worker({ hostname, queues: [hostname], logger: recordingLogger(hostname).logger, steps: clusterSteps({ heartbeatInterval: 60 }) });
      await worker.start();
      workers.push(worker);
    }
    monitorApp = newApp();
    monitor = new EventReceiver(monitorApp.connection, {
      clock: monitorApp.clock,
      handlers: {
        '*': (event) => {
          seen.push(event);
          state.event(event);
        },
      },
    });
    await monitor.start();
  });

  afterAll(async () => {
    for (const worker of workers) await worker.stop();
    await monitor.close();
    for (const app of apps) await app.close();
  });

  it('keeps the mailbox clock (pidbox headers) apart from the app clock (events, hello, inspect clock)', async () => {
    const [a, b] = workers as [Worker, Worker];
    // Let the start-up events settle: each worker's Gossip adjusts its clock to the other's worker-online and to the
    // notice each sends once it has decided to watch (1.5 heartbeat intervals after its start, 3 s at most). The two
    // decisions come milliseconds apart, so the clocks are read once both were made and the clock stayed put.
    await waitFor(() => clusterOf(a)?.gossip?.aliveWorkers().length === 1 && clusterOf(b)?.gossip?.aliveWorkers().length === 1, 5000, 'the workers to meet');
    await waitFor(() => clusterOf(a)?.gossip?.deciding === false && clusterOf(b)?.gossip?.deciding === false, 5000, 'both workers to decide whether to watch');
    for (let last = -1; a.app.clock.value !== last; ) {
      last = a.app.clock.value;
      await sleep(200);
    }
    const appBefore = a.app.clock.value;
    const mailboxBefore = a.app.control.mailbox.clock.value;
    const replies = await monitorApp.control.broadcast('clock', { reply: true, destination: [a.hostname] });
    const reported = (replies[0]?.[a.hostname] as { clock: number }).clock;
    // Receiving the control message forwarded the app clock once; `clock` reads it.
    expect(reported).toBe(appBefore + 1);
    expect(a.app.clock.value).toBe(appBefore + 1);
    // The node adjusted its mailbox clock to the request's header and forwarded it for the reply.
    expect(a.app.control.mailbox.clock.value).toBeGreaterThan(mailboxBefore);
    expect(a.app.control.mailbox.clock.value).not.toBe(a.app.clock.value);
    // hello answers with the app clock forwarded again.
    const hello = await monitorApp.control.broadcast('hello', { arguments: { from_node: 'x@lamport', revoked: {} }, reply: true, destination: [a.hostname] });
    expect((hello[0]?.[a.hostname] as { clock: number }).clock).toBe(appBefore + 3);
    // stats reports the same counter as a string.
    const stats = await monitorApp.control.broadcast('stats', { reply: true, destination: [a.hostname] });
    expect((stats[0]?.[a.hostname] as { clock: string }).clock).toBe(String(appBefore + 4));
  });

  it('task events are causally ordered across workers: sent < received < started < succeeded for every task', async () => {
    const client = newApp();
    const heartbeatAfter = (hostname: string, since: number): boolean =>
      seen.some((e) => e.type === 'worker-heartbeat' && e.hostname === hostname && e.local_received > since);
    // Clocks meet through worker events: everyone beats, then the worker that gets the next task.
    const syncTo = async (target: string): Promise<void> => {
      const since = Date.now() / 1000 - 0.001;
      await monitorApp.control.broadcast('heartbeat', {});
      await waitFor(() => workers.every((w) => heartbeatAfter(w.hostname, since)), 5000, 'heartbeats');
      const mine = Date.now() / 1000 - 0.001;
      await monitorApp.control.broadcast('heartbeat', { destination: [target] });
      await waitFor(() => heartbeatAfter(target, mine), 5000, `a heartbeat from ${target}`);
    };
    const tasks: ClusterTask[] = [];
    for (let i = 0; i < 6; i++) {
      const target = (workers[i % 2] as Worker).hostname;
      await syncTo(target);
      const id = `lamport-${i}`;
      sendTaskSentEvent(client, { uuid: id, root_id: id, parent_id: null, name: 'add', args: `(${i}, ${i})`, kwargs: '{}', retries: 0, eta: null, expires: null, queue: target, exchange: '', routing_key: target });
      await waitFor(() => state.tasks.get(id)?.times['sent'] !== undefined, 5000, 'task-sent');
      await client.sendTask('add', [i, i], {}, { taskId: id, queue: target });
      await waitFor(() => state.tasks.get(id)?.state === 'SUCCESS', 5000, `task ${id}`);
      tasks.push(state.tasks.get(id) as ClusterTask);
    }
    for (const task of tasks) {
      const clocks = ['sent', 'received', 'started', 'succeeded'].map((subject) => task.eventOf(subject)?.clock as number);
      expect(clocks, task.uuid).toEqual([...clocks].sort((x, y) => x - y));
      expect(new Set(clocks).size, task.uuid).toBe(4);
      expect(task.events.map((e) => e.type)).toEqual(['task-sent', 'task-received', 'task-started', 'task-succeeded']);
    }
    // The workers' clocks were 1000 apart at the start; heartbeats brought them together.
    const [a, b] = workers as [Worker, Worker];
    expect(Math.abs(a.app.clock.value - b.app.clock.value)).toBeLessThan(100);
  });
});
