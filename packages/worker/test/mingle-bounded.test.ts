// Bounded Mingle (issue #36): a starting kq worker asks only the Gossip watchers, who name the watchers and every
// peer they know; the others merge its revoked set and stay silent. A revoke made before the worker started still
// reaches it, and when no watcher answers it asks everyone as Celery does. kq workers on the memory transport.
import { MemoryBroker, NO_REPLY, type MailboxNode } from '@kq/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../src/app/app';
import { clusterOf } from '../src/cluster/cluster-context';
import { clusterSteps } from '../src/cluster/cluster-steps';
import { Gossip } from '../src/cluster/gossip';
import { allWatchersAnswered, HELLO_WATCHERS_ONLY, WATCHERS_HELLO_WINDOW } from '../src/cluster/mingle';
import type { Worker } from '../src/runtime/worker';
import { heartbeatFrom, memoryApp, memoryBrokerName, recordingLogger, waitFor } from './fixtures/cluster/helpers';

const INTERVAL = 0.05;

describe('bounded Mingle', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  function newWorker(
    broker: string,
    hostname: string,
    heartbeatInterval = INTERVAL,
    mingleTimeout = 0.3,
  ): { app: App; worker: Worker; messages: () => string[]; ran: string[] } {
    const app = memoryApp(broker);
    const ran: string[] = [];
    app.task('bounded.record', (_ctx, id: string) => {
      ran.push(id);
    });
    const log = recordingLogger(hostname);
    const worker = app.worker({
      hostname,
      queues: [`q.${hostname}`],
      logger: log.logger,
      steps: clusterSteps({ mingle: true, heartbeatInterval, gossipWatchers: 1, mingleTimeout }),
    });
    cleanups.push(async () => {
      await worker.stop();
      await app.close();
    });
    return { app, worker, messages: log.messages, ran };
  }

  async function fleetOfThree(broker: string): Promise<ReturnType<typeof newWorker>[]> {
    const fleet = [newWorker(broker, 'a@test'), newWorker(broker, 'b@test'), newWorker(broker, 'c@test')];
    for (const member of fleet) await member.worker.start();
    const gossips = fleet.map((member) => clusterOf(member.worker)?.gossip);
    // a (the lowest name) watches; b and c have decided they do not.
    await waitFor(() => gossips.every((g) => g !== undefined && !g.deciding) && gossips[0]?.watching === true && !gossips[1]?.watching && !gossips[2]?.watching, 5000, 'a to be the only watcher');
    return fleet;
  }

  it('only the watcher answers; the new worker learns every peer from it and the others still merge its revoked set', async () => {
    const broker = memoryBrokerName('mingle-bounded');
    const [a, b, c] = (await fleetOfThree(broker)) as [ReturnType<typeof newWorker>, ReturnType<typeof newWorker>, ReturnType<typeof newWorker>];
    const d = newWorker(broker, 'd@test');
    d.worker.state.revoked.add('revoked-by-d');
    await d.worker.start();

    expect(d.messages()).toEqual(expect.arrayContaining(['mingle: sync with 1 nodes', 'mingle: sync complete']));
    // Every worker got the hello and merged d's revoked set; only a answered.
    for (const peer of [a, b, c]) {
      expect(peer.messages()).toContain('sync with d@test');
      expect(peer.worker.state.revoked.has('revoked-by-d')).toBe(true);
    }
    // d's Gossip starts from the peers a named, the watcher known as a kq worker.
    const gossip = clusterOf(d.worker)?.gossip;
    expect(gossip?.aliveWorkers().map((w) => w.hostname).sort()).toEqual(['a@test', 'b@test', 'c@test']);
    expect(gossip?.state.workers.get('a@test')?.fields['sw_ident']).toBe('kq');
    // Mingle's reply queue went with it: no binding of d's is left for later replies to be routed past.
    expect(MemoryBroker.named(broker).bindings.get('celery.pidbox')).toHaveLength(4); // the four nodes' own queues
    expect(MemoryBroker.named(broker).bindings.get('reply.celery.pidbox') ?? []).toEqual([]);
  });

  it('a worker to which Mingle named enough watchers below its name decides at once, and never follows heartbeats', async () => {
    const broker = memoryBrokerName('mingle-bounded-decided');
    await fleetOfThree(broker);
    // A heartbeat interval of 1 s: it would otherwise decide for 1.5 s, following every heartbeat meanwhile.
    const d = newWorker(broker, 'd@test', 1);
    await d.worker.start();
    const gossip = clusterOf(d.worker)?.gossip;
    expect(gossip?.deciding).toBe(false);
    expect(gossip?.followingHeartbeats).toBe(false);
    expect(gossip?.watching).toBe(false);
    // A worker whose name comes before the watcher's still decides (and here takes over the watching).
    const early = newWorker(broker, '0@test', 1);
    await early.worker.start();
    const earlyGossip = clusterOf(early.worker)?.gossip;
    expect(earlyGossip?.deciding).toBe(true);
    await waitFor(() => earlyGossip?.watching === true, 5000, 'the worker with the lowest name to watch');
  });

  it('a worker whose only neighbour is still deciding whether to watch is done with Mingle once that neighbour answered', async () => {
    const broker = memoryBrokerName('mingle-bounded-deciding');
    // Heartbeats every second: a decides for 1.5 s. Mingle's timeout of 30 s: b's start would last that long after
    // a's reply, were the reply to name no watcher.
    const a = newWorker(broker, 'a@test', 1, 30);
    await a.worker.start();
    const gossip = clusterOf(a.worker)?.gossip;
    expect(gossip?.deciding).toBe(true);
    expect(gossip?.mingleHints()?.watchers).toEqual(['a@test']);
    const b = newWorker(broker, 'b@test', 1, 30);
    await b.worker.start();
    expect(b.messages()).toEqual(expect.arrayContaining(['mingle: sync with 1 nodes', 'mingle: sync complete']));
    expect(clusterOf(b.worker)?.gossip?.state.workers.get('a@test')?.fields['sw_ident']).toBe('kq');
  }, 10_000);

  it('a deciding neighbour names as watchers itself and the watchers it heard from, not every kq worker it knows', async () => {
    // A fleet started together: a is deciding and has heard the heartbeat of 0@test, a kq worker starting too whose
    // node was not listening when b's hello went out (here: never listens). Were a to name 0@test, the lowest name,
    // b would wait for its answer until Mingle's timeout passed (30 s here).
    const broker = memoryBrokerName('mingle-bounded-together');
    const a = newWorker(broker, 'a@test', 1, 30);
    await a.worker.start();
    const gossip = clusterOf(a.worker)?.gossip;
    expect(gossip?.deciding).toBe(true);
    const at = Date.now() / 1000;
    gossip?.onMessage({ type: 'worker-heartbeat', hostname: '0@test', clock: 1, freq: 1, timestamp: at, pid: 1, sw_ident: 'kq' }, heartbeatFrom('0@test'));
    expect(gossip?.aliveWorkers().map((worker) => worker.hostname)).toEqual(['0@test']);
    expect(gossip?.mingleHints()).toEqual({ watchers: ['a@test'], peers: ['0@test'] });

    const b = newWorker(broker, 'b@test', 1, 30);
    const started = Date.now();
    await b.worker.start();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(b.messages()).toEqual(expect.arrayContaining(['mingle: sync with 1 nodes', 'mingle: sync complete']));
  }, 20_000);

  it("a worker whose node listens before its Gossip has started names itself, so the asker need not wait", async () => {
    // The control node and Gossip start side by side: a hello can reach the node first. Answered without a watcher's
    // name, b would collect replies until Mingle's timeout passed (30 s here).
    const broker = memoryBrokerName('mingle-bounded-starting');
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const start = Gossip.prototype.start;
    const spy = vi.spyOn(Gossip.prototype, 'start').mockImplementation(async function (this: Gossip, ...args: Parameters<Gossip['start']>) {
      if (this.hostname === 'a@test') await held;
      return start.apply(this, args);
    });
    cleanups.push(async () => {
      release();
      spy.mockRestore();
    });
    const a = newWorker(broker, 'a@test', 1, 30);
    const aStarted = a.worker.start();
    await waitFor(() => (MemoryBroker.named(broker).bindings.get('celery.pidbox') ?? []).length === 1, 5000, "a's node to listen");
    expect(clusterOf(a.worker)?.gossip).toBeUndefined();

    const b = newWorker(broker, 'b@test', 1, 30);
    await b.worker.start();
    expect(b.messages()).toEqual(expect.arrayContaining(['mingle: sync with 1 nodes', 'mingle: sync complete']));
    // a named itself as a watcher: b's Gossip knows it as a kq worker.
    expect(clusterOf(b.worker)?.gossip?.state.workers.get('a@test')?.fields['sw_ident']).toBe('kq');
    release();
    await aStarted;
  }, 20_000);

  it('a task revoked before a worker started is refused by it (Mingle brings the revoke)', async () => {
    const broker = memoryBrokerName('mingle-bounded-revoke');
    const [a] = (await fleetOfThree(broker)) as [ReturnType<typeof newWorker>];
    await a.app.control.revoke('revoked-before-d');
    await waitFor(() => a.worker.state.revoked.has('revoked-before-d'), 2000, 'the revoke to reach a');

    const d = newWorker(broker, 'd@test');
    const outcomes: string[] = [];
    d.worker.on('task', (kind, request) => outcomes.push(`${kind} ${request.id}`));
    await d.worker.start();
    expect(d.worker.state.revoked.has('revoked-before-d')).toBe(true);
    await d.app.sendTask('bounded.record', ['revoked-before-d'], {}, { queue: 'q.d@test', taskId: 'revoked-before-d' });
    await d.app.sendTask('bounded.record', ['not-revoked'], {}, { queue: 'q.d@test', taskId: 'not-revoked' });
    await waitFor(() => outcomes.includes('succeeded not-revoked'), 5000, 'the task after it to run');
    expect(d.ran).toEqual(['not-revoked']);
    expect(outcomes).toContain('revoked revoked-before-d');
    expect(outcomes).not.toContain('started revoked-before-d');
  });

  it('asks everyone, as Celery does, when no watcher answers', async () => {
    const broker = memoryBrokerName('mingle-bounded-fallback');
    const me = newWorker(broker, 'me@test');
    const asked: boolean[] = [];
    // A node that, like a kq worker not watching, leaves watchers-only hellos unanswered.
    const node: MailboxNode = me.app.control.mailbox.node('quiet@test', {
      hello: (args) => {
        asked.push(args[HELLO_WATCHERS_ONLY] === true);
        return args[HELLO_WATCHERS_ONLY] === true ? NO_REPLY : { clock: 4242, revoked: { 'from-quiet': [1.5, 'from-quiet'] } };
      },
    });
    await node.listen();
    cleanups.push(() => node.close());

    await me.worker.start();
    expect(asked).toEqual([true, false]);
    expect(me.worker.state.revoked.has('from-quiet')).toBe(true);
    expect(me.app.clock.value).toBeGreaterThan(4242);
  });

  it("a watchers-only hello lives longer than Celery's, so a busy watcher's late answer still counts", async () => {
    const broker = memoryBrokerName('mingle-bounded-expiry');
    const me = newWorker(broker, 'me@test'); // mingleTimeout 0.3 s
    const lifetimes: Array<[boolean, number]> = [];
    const node: MailboxNode = me.app.control.mailbox.node('busy@test', {
      hello: (args, context) => {
        lifetimes.push([args[HELLO_WATCHERS_ONLY] === true, Number(context.headers['expires']) - Date.now() / 1000]);
        return { clock: 7, revoked: {}, kq_watchers: ['busy@test'], kq_peers: [] };
      },
    });
    await node.listen();
    cleanups.push(() => node.close());
    await me.worker.start();
    expect(lifetimes).toHaveLength(1); // answered, so there was no second hello to everyone
    const [[watchersOnly, lifetime]] = lifetimes as [[boolean, number]];
    expect(watchersOnly).toBe(true);
    // Celery's hello expires after Mingle's timeout (0.3 s here); this one after WATCHERS_HELLO_WINDOW times it.
    expect(lifetime).toBeGreaterThan(0.3 * 2);
    expect(lifetime).toBeLessThanOrEqual(0.3 * WATCHERS_HELLO_WINDOW);
  });

  it('a Python-style reply (no hints) is synced with, and collecting waits for every watcher named', () => {
    const hints = (watchers: string[]): Record<string, unknown> => ({ clock: 1, revoked: {}, kq_watchers: watchers, kq_peers: [] });
    expect(allWatchersAnswered([{ 'py@x': { clock: 3, revoked: {} } }], 'me@x')).toBe(false);
    expect(allWatchersAnswered([{ 'a@x': hints(['a@x', 'b@x']) }], 'me@x')).toBe(false);
    expect(allWatchersAnswered([{ 'a@x': hints(['a@x', 'b@x']) }, { 'b@x': hints(['a@x', 'b@x']) }], 'me@x')).toBe(true);
    expect(allWatchersAnswered([{ 'a@x': hints(['a@x', 'me@x']) }], 'me@x')).toBe(true); // never waits for itself
    expect(allWatchersAnswered([{ 'a@x': { kq_watchers: 'not a list' } }], 'me@x')).toBe(false);
  });
});
