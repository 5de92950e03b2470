// Gossip (docs/wire.md#mingle-heartbeats-and-gossip): neighbours from worker.# events, the alive rule, lost nodes, own
// events, the clock, and elections (never decided on a lone request). kq workers on the memory transport.
import { LamportClock, type Delivery } from '@kq/core';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../src/app/app';
import { clusterSteps } from '../src/cluster/cluster-steps';
import { clusterOf } from '../src/cluster/cluster-context';
import { compareEntries, heapPush, type ElectionEntry } from '../src/cluster/election-heap';
import type { Gossip } from '../src/cluster/gossip';
import type { ClusterWorker } from '../src/events/cluster-state';
import type { Worker } from '../src/runtime/worker';
import { memoryApp, memoryBrokerName, recordingLogger, waitFor } from './fixtures/cluster/helpers';

const delivery = (routingKey: string, hostname: string): Delivery =>
  ({ deliveryInfo: { routingKey, exchange: 'celeryev' }, headers: { hostname } }) as unknown as Delivery;

describe('Gossip', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  function start(broker: string, hostname: string, runs: string[] = []): { app: App; worker: Worker; messages: () => string[] } {
    const app = memoryApp(broker);
    app.task('elected.task', (ctx) => {
      runs.push(ctx.request.hostname);
    });
    const log = recordingLogger(hostname);
    const worker = app.worker({ hostname, logger: log.logger, steps: clusterSteps({ heartbeatInterval: 0.05 }) });
    cleanups.push(async () => {
      await worker.stop();
      await app.close();
    });
    return { app, worker, messages: log.messages };
  }

  it('tracks the other workers (never itself), follows their clocks and hears them leave', async () => {
    const broker = memoryBrokerName('gossip');
    const a = start(broker, 'a@test');
    const b = start(broker, 'b@test');
    const joined: string[] = [];
    const left: string[] = [];
    await a.worker.start();
    const gossipA = findGossip(a.worker);
    gossipA.on('node-join', (w: ClusterWorker) => joined.push(w.hostname));
    gossipA.on('node-leave', (w: ClusterWorker) => left.push(w.hostname));
    b.app.clock.adjust(10_000);
    await b.worker.start();
    await waitFor(() => gossipA.aliveWorkers().some((w) => w.hostname === 'b@test'), 5000, 'a to see b');
    const gossipB = findGossip(b.worker);
    await waitFor(() => gossipB.aliveWorkers().some((w) => w.hostname === 'a@test'), 5000, 'b to see a');
    expect(gossipA.aliveWorkers().map((w) => w.hostname)).toEqual(['b@test']);
    expect(joined).toContain('b@test');
    expect(a.app.clock.value).toBeGreaterThan(10_000);
    await b.worker.stop();
    await waitFor(() => left.includes('b@test'), 5000, 'b to leave');
    expect(gossipA.aliveWorkers()).toEqual([]);
  });

  it('forwards the clock on its own events, ignores task events, and reports workers whose heartbeats stopped', async () => {
    const broker = memoryBrokerName('gossip-unit');
    const me = start(broker, 'me@test');
    await me.worker.start();
    const gossip = findGossip(me.worker);
    // Alone, it follows every heartbeat itself once it heard of no watcher for a heartbeat interval and a half.
    await waitFor(() => gossip.watching, 5000, 'the lone worker to watch');
    const lost: string[] = [];
    gossip.on('node-lost', (w) => lost.push(w.hostname));

    const before = me.app.clock.value;
    gossip.onMessage({ type: 'worker-heartbeat', hostname: 'me@test', clock: 1, timestamp: Date.now() / 1000 }, delivery('worker.heartbeat', 'me@test'));
    expect(me.app.clock.value).toBe(before + 1);

    const beforeTask = me.app.clock.value;
    gossip.onMessage({ type: 'task-succeeded', hostname: 'x@test', clock: 99_999, uuid: 'u', timestamp: 1 }, delivery('task.succeeded', 'x@test'));
    expect(me.app.clock.value).toBe(beforeTask);

    const now = Date.now() / 1000;
    gossip.onMessage({ type: 'worker-heartbeat', hostname: 'ghost@test', clock: 3, freq: 2.0, timestamp: now, pid: 1 }, delivery('worker.heartbeat', 'ghost@test'));
    expect(gossip.aliveWorkers(now + 3.9).map((w) => w.hostname)).toEqual(['ghost@test']);
    expect(gossip.aliveWorkers(now + 4.1)).toEqual([]); // 2 × freq after the heartbeat was received
    gossip.periodic(now + 3);
    expect(lost).toEqual([]);
    gossip.periodic(now + 5);
    expect(lost).toEqual(['ghost@test']);
    expect(me.messages()).toContain('missed heartbeat from ghost@test');
    expect(gossip.state.workers.has('ghost@test')).toBe(false);
  });

  it('elects exactly one leader among live workers, which runs the elected task', async () => {
    const broker = memoryBrokerName('gossip-election');
    const runs: string[] = [];
    const a = start(broker, 'a@test', runs);
    const b = start(broker, 'b@test', runs);
    await a.worker.start();
    await b.worker.start();
    const gossips = [findGossip(a.worker), findGossip(b.worker)];
    await waitFor(() => gossips.every((g) => g.aliveWorkers().length === 1), 5000, 'both to see each other');
    const results: Array<{ leader: string; won: boolean }> = [];
    for (const g of gossips) g.on('elected', (_id, leader, _topic, won) => results.push({ leader, won }));
    await a.app.control.broadcast('election', { arguments: { id: 'elect-1', topic: 'task', action: { task: 'elected.task', args: [], kwargs: {}, options: {} } } });
    await waitFor(() => results.length === 2, 5000, 'both to decide');
    expect(new Set(results.map((r) => r.leader)).size).toBe(1);
    expect(results.filter((r) => r.won)).toHaveLength(1);
    await waitFor(() => runs.length === 1, 5000, 'the elected task to run');
  });

  it("builds election heaps exactly like Python's heapq and picks the leader like kombu's sort_heap", () => {
    // Expected values computed with CPython 3.11 heapq and kombu 5.2.4's LamportClock.sort_heap.
    const heap: ElectionEntry[] = [];
    for (const entry of [[3, 'b.1'], [1, 'a.2'], [2, 'c.3'], [1, '0.4'], [1, 'z.5']] as const) heapPush(heap, [entry[0], entry[1], 'task', null]);
    expect(heap.map(([clock, id]) => [clock, id])).toEqual([[1, '0.4'], [1, 'a.2'], [2, 'c.3'], [3, 'b.1'], [1, 'z.5']]);
    expect(LamportClock.sortHeap(heap)?.[1]).toBe('0.4');
    const tie: ElectionEntry[] = [];
    for (const id of ['w2@x.10', 'w1@x.20', 'w3@x.5']) heapPush(tie, [5, id, 'task', null]);
    expect(tie.map(([, id]) => id)).toEqual(['w1@x.20', 'w2@x.10', 'w3@x.5']);
    expect(LamportClock.sortHeap(tie)?.[1]).toBe('w1@x.20');
    expect(compareEntries([1, 'a', 't', null], [1, 'a', 't', null])).toBe(0);
  });
});

function findGossip(worker: Worker): Gossip {
  const gossip = clusterOf(worker)?.gossip;
  if (!gossip) throw new Error(`no gossip for ${worker.hostname}`);
  return gossip;
}
