// Gossip at scale (issue #36): only the `gossipWatchers` kq workers with the lowest names follow every heartbeat; the
// others bind online, offline and election events, hear from the watchers whom they lost, and take over when the
// watchers go silent. kq workers on the memory transport; a fake peer is an event dispatcher on the same broker.
import type { Delivery } from '@kq/core';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../src/app/app';
import { clusterSteps } from '../src/cluster/cluster-steps';
import { clusterOf } from '../src/cluster/cluster-context';
import { gossipNoticeExchange, type Gossip } from '../src/cluster/gossip';
import { EventDispatcher } from '../src/events/event-dispatcher';
import type { Worker } from '../src/runtime/worker';
import { heartbeatFrom, memoryApp, memoryBrokerName, recordingLogger, waitFor } from './fixtures/cluster/helpers';

const INTERVAL = 0.05;

describe('Gossip watchers', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  function start(broker: string, hostname: string, gossipWatchers: number | 'default' = 1, heartbeat = true): { app: App; worker: Worker; messages: () => string[] } {
    const app = memoryApp(broker);
    const log = recordingLogger(hostname);
    const steps = clusterSteps({ heartbeatInterval: INTERVAL, heartbeat, ...(gossipWatchers === 'default' ? {} : { gossipWatchers }) });
    const worker = app.worker({ hostname, logger: log.logger, steps });
    cleanups.push(async () => {
      await worker.stop();
      await app.close();
    });
    return { app, worker, messages: log.messages };
  }

  /** A peer that is nothing but the events it sends; `stop()` makes it vanish without a word, as SIGKILL would. */
  function fakePeer(broker: string, hostname: string, type: 'worker-heartbeat' | 'worker-watching', online = true): { stop(): void } {
    const app = memoryApp(broker);
    const exchange = type === 'worker-watching' ? gossipNoticeExchange(app.conf.eventExchange) : app.conf.eventExchange;
    const dispatcher = new EventDispatcher(app.connection, { hostname, clock: app.clock, exchange });
    const events = new EventDispatcher(app.connection, { hostname, clock: app.clock, exchange: app.conf.eventExchange });
    if (online) events.send('worker-online', { freq: INTERVAL, sw_ident: 'kq', sw_ver: '0.1.0', sw_sys: 'Linux' });
    const timer = setInterval(() => dispatcher.send(type, { freq: INTERVAL, sw_ident: 'kq' }), INTERVAL * 1000);
    const stop = (): void => clearInterval(timer);
    cleanups.push(async () => {
      stop();
      await dispatcher.close(500);
      await events.close(500);
      await app.close();
    });
    return { stop };
  }

  it('leaves heartbeats to the watcher: the other workers receive none, and still see every peer alive', async () => {
    const broker = memoryBrokerName('gossip-watchers');
    const fleet = [start(broker, 'a@test'), start(broker, 'b@test'), start(broker, 'c@test')];
    for (const member of fleet) await member.worker.start();
    const [a, b, c] = fleet.map((member) => findGossip(member.worker)) as [Gossip, Gossip, Gossip];
    await waitFor(() => a.watching && [a, b, c].every((g) => g.aliveWorkers().length === 2), 5000, 'a to watch and everyone to see two peers');
    // b and c followed heartbeats while they decided whether to watch (their first interval and a half) and then stopped.
    await waitFor(() => !b.followingHeartbeats && !c.followingHeartbeats, 5000, 'b and c to leave heartbeats to a');
    await new Promise((resolve) => setTimeout(resolve, INTERVAL * 1000)); // what was in flight when they unbound
    const heard = new Map<Gossip, string[]>([[a, []], [b, []], [c, []]]);
    for (const gossip of [a, b, c]) {
      const onMessage = gossip.onMessage.bind(gossip);
      gossip.onMessage = (body: unknown, delivery: Delivery) => {
        heard.get(gossip)?.push(delivery.deliveryInfo.routingKey);
        onMessage(body, delivery);
      };
    }
    await waitFor(() => (heard.get(a) ?? []).filter((key) => key === 'worker.heartbeat').length >= 10, 5000, 'the watcher to hear 10 heartbeats');
    expect(b.watching || c.watching).toBe(false);
    expect(heard.get(b)).not.toContain('worker.heartbeat');
    expect(heard.get(c)).not.toContain('worker.heartbeat');
    expect(b.aliveWorkers().map((w) => w.hostname).sort()).toEqual(['a@test', 'c@test']);
    expect(a.aliveWorkers().map((w) => w.hostname).sort()).toEqual(['b@test', 'c@test']);
  });

  it('by default the two workers with the lowest names watch, and the others do not', async () => {
    const broker = memoryBrokerName('gossip-default-watchers');
    const fleet = ['a@test', 'b@test', 'c@test', 'd@test'].map((name) => start(broker, name, 'default'));
    for (const member of fleet) await member.worker.start();
    const gossips = fleet.map((member) => findGossip(member.worker));
    await waitFor(() => gossips.every((g) => !g.deciding && g.aliveWorkers().length === 3), 5000, 'everyone to decide and see three peers');
    await new Promise((resolve) => setTimeout(resolve, INTERVAL * 3000));
    expect(gossips.map((g) => g.watching)).toEqual([true, true, false, false]);
  });

  it('a worker gone without a word is reported lost by the watcher, and every other worker forgets it', async () => {
    const broker = memoryBrokerName('gossip-lost');
    const a = start(broker, 'a@test');
    const b = start(broker, 'b@test');
    await a.worker.start();
    await b.worker.start();
    const [gossipA, gossipB] = [findGossip(a.worker), findGossip(b.worker)];
    await waitFor(() => gossipA.watching && gossipB.aliveWorkers().length === 1, 5000, 'a to watch');
    const ghost = fakePeer(broker, 'z@test', 'worker-heartbeat');
    await waitFor(() => gossipB.aliveWorkers().some((w) => w.hostname === 'z@test'), 5000, 'b to hear of z');
    await waitFor(() => gossipA.aliveWorkers().some((w) => w.hostname === 'z@test'), 5000, 'a to hear z');
    const lost: string[] = [];
    gossipB.on('node-lost', (w) => lost.push(w.hostname));
    ghost.stop();
    await waitFor(() => lost.includes('z@test'), 5000, 'b to hear that z was lost');
    expect(b.messages()).toContain('reported lost by a@test: z@test');
    expect(a.messages()).toContain('missed heartbeat from z@test');
    expect(gossipB.aliveWorkers().map((w) => w.hostname)).toEqual(['a@test']);
  });

  it('a worker whose coming online another missed is named in the watcher\'s next notice, and that one can tell it lost', async () => {
    // z's worker-online never reaches b (here: z sends none; in a fleet, z became ready while b was still binding its
    // Gossip queue), and b follows no heartbeats. Before, b never knew z, and dropped the watcher's report of its loss.
    const broker = memoryBrokerName('gossip-joined');
    const a = start(broker, 'a@test');
    const b = start(broker, 'b@test');
    await a.worker.start();
    await b.worker.start();
    const [gossipA, gossipB] = [findGossip(a.worker), findGossip(b.worker)];
    await waitFor(() => gossipA.watching && !gossipB.followingHeartbeats && gossipB.aliveWorkers().length === 1, 5000, 'a to watch, b not');
    const ghost = fakePeer(broker, 'z@test', 'worker-heartbeat', false);
    await waitFor(() => gossipA.aliveWorkers().some((w) => w.hostname === 'z@test'), 5000, 'a to hear z');
    await waitFor(() => gossipB.aliveWorkers().some((w) => w.hostname === 'z@test'), 5000, "b to learn of z from a's notice");
    const lost: string[] = [];
    gossipB.on('node-lost', (w) => lost.push(w.hostname));
    ghost.stop();
    await waitFor(() => lost.includes('z@test'), 5000, 'b to hear that z was lost');
    expect(b.messages()).toContain('reported lost by a@test: z@test');
  });

  it('workers heard again after they were reported lost are announced in one notice at the next check', async () => {
    const broker = memoryBrokerName('gossip-found');
    const a = start(broker, 'a@test');
    const b = start(broker, 'b@test');
    await a.worker.start();
    await b.worker.start();
    const [gossipA, gossipB] = [findGossip(a.worker), findGossip(b.worker)];
    await waitFor(() => gossipA.watching && !gossipB.followingHeartbeats, 5000, 'a to watch and b not to');
    const beat = (hostname: string, at: number): void =>
      gossipA.onMessage({ type: 'worker-heartbeat', hostname, clock: 1, freq: 2, timestamp: at, pid: 1, sw_ident: 'kq' }, heartbeatFrom(hostname));
    const now = Date.now() / 1000;
    for (const ghost of ['y@test', 'z@test']) beat(ghost, now);
    gossipA.periodic(now + 5); // y and z (and b, whose heartbeats a judges by the same clock) are lost
    expect(a.messages()).toEqual(expect.arrayContaining(['missed heartbeat from y@test', 'missed heartbeat from z@test']));
    const found: Array<Array<{ hostname: string }>> = [];
    const onNotice = gossipB.onNotice.bind(gossipB);
    gossipB.onNotice = (event: Record<string, unknown>) => {
      const nodes = event['nodes'] as Array<{ hostname: string }>;
      // b itself may be announced found on its own (a judged it lost too): only y and z's notices count here.
      if (event['type'] === 'worker-found' && nodes.some((node) => node.hostname !== 'b@test')) found.push(nodes);
      onNotice(event);
    };
    beat('y@test', Date.now() / 1000);
    beat('z@test', Date.now() / 1000);
    await waitFor(() => ['y@test', 'z@test'].every((host) => gossipB.aliveWorkers().some((w) => w.hostname === host)), 5000, 'b to know y and z again');
    expect(found).toHaveLength(1);
    expect(found[0]?.map((node) => node.hostname)).toEqual(expect.arrayContaining(['y@test', 'z@test']));
  });

  it('when the watcher goes silent the next worker watches in its place', async () => {
    const broker = memoryBrokerName('gossip-takeover');
    const watcher = fakePeer(broker, 'a@test', 'worker-watching');
    const b = start(broker, 'b@test');
    const c = start(broker, 'c@test');
    await b.worker.start();
    await c.worker.start();
    const [gossipB, gossipC] = [findGossip(b.worker), findGossip(c.worker)];
    // Both heard a's notices during their first interval and a half: neither watches.
    await waitFor(() => gossipC.aliveWorkers().length === 2 && gossipB.aliveWorkers().length === 2, 5000, 'b and c to know a and each other');
    await new Promise((resolve) => setTimeout(resolve, INTERVAL * 3000));
    expect([gossipB.watching, gossipC.watching]).toEqual([false, false]);
    watcher.stop();
    await waitFor(() => gossipB.watching, 5000, 'b to watch once a went silent');
    expect(b.messages()).toContain('missed heartbeat from a@test');
    expect(gossipC.watching).toBe(false);
  });

  it('a worker that is not a watcher checks for lost peers five times less often than the watcher does', async () => {
    const broker = memoryBrokerName('gossip-check-pace');
    const fleet = [start(broker, 'a@test'), start(broker, 'b@test')];
    for (const member of fleet) await member.worker.start();
    const [a, b] = fleet.map((member) => findGossip(member.worker)) as [Gossip, Gossip];
    await waitFor(() => a.watching && !b.watching && !b.followingHeartbeats, 5000, 'a to watch and b to leave heartbeats to it');
    const checks = new Map<Gossip, number>([[a, 0], [b, 0]]);
    for (const gossip of [a, b]) {
      const periodic = gossip.periodic.bind(gossip);
      gossip.periodic = (now?: number) => {
        checks.set(gossip, (checks.get(gossip) ?? 0) + 1);
        periodic(now);
      };
    }
    // A watcher checks twice a heartbeat interval (every 25 ms here), any other worker twice a notice period (125 ms).
    await new Promise((resolve) => setTimeout(resolve, INTERVAL * 20_000));
    expect(checks.get(a)).toBeGreaterThan(20);
    expect(checks.get(b)).toBeGreaterThanOrEqual(3);
    expect(checks.get(b)).toBeLessThan((checks.get(a) ?? 0) / 3);
    // Once b watches (a gone silent), it checks at the watcher's pace.
    await fleet[0]?.worker.stop();
    await waitFor(() => b.watching, 5000, 'b to watch in a\'s place');
    checks.set(b, 0);
    await new Promise((resolve) => setTimeout(resolve, INTERVAL * 10_000));
    expect(checks.get(b)).toBeGreaterThan(10);
  });

  it('workers without heartbeats never watch, so nobody judges them lost over and over (--without-heartbeat)', async () => {
    const broker = memoryBrokerName('gossip-no-heartbeat');
    const fleet = [start(broker, 'a@test', 'default', false), start(broker, 'b@test', 'default', false), start(broker, 'c@test', 'default', false)];
    for (const member of fleet) await member.worker.start();
    const gossips = fleet.map((member) => findGossip(member.worker));
    // Ten heartbeat intervals: a watcher would have judged the silent peers lost after two, and again after each notice.
    await new Promise((resolve) => setTimeout(resolve, INTERVAL * 10_000));
    expect(gossips.map((gossip) => gossip.watching)).toEqual([false, false, false]);
    const judged = fleet.flatMap((member) => member.messages()).filter((line) => /lost|missed heartbeat/.test(line));
    expect(judged).toEqual([]);
  });
});

function findGossip(worker: Worker): Gossip {
  const gossip = clusterOf(worker)?.gossip;
  if (!gossip) throw new Error(`no gossip for ${worker.hostname}`);
  return gossip;
}
