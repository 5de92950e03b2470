// A burst of losses (more than a few, and more than a third of the workers known, in one check) more likely means
// the judge fell behind than that the fleet died: a watcher reports them only if they stay silent another heartbeat
// interval, and a non-watcher keeps the watchers it still hears from, so it does not start following every heartbeat.
// Gossip objects that were never started (no timers), fed events by hand with explicit check times.
import type { Delivery } from '@kq/core';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../src/app/app';
import { Gossip } from '../src/cluster/gossip';
import { isLostBurst } from '../src/cluster/lost-burst';
import type { WorkerHost } from '../src/runtime/worker-host';
import { memoryApp, memoryBrokerName, recordingLogger } from './fixtures/cluster/helpers';

const delivery = (routingKey: string, hostname: string): Delivery =>
  ({ deliveryInfo: { routingKey, exchange: 'celeryev' }, headers: { hostname } }) as unknown as Delivery;

describe('a burst of lost workers', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  function gossipOf(hostname: string): { gossip: Gossip; messages: () => string[]; app: App } {
    const app = memoryApp(memoryBrokerName('gossip-burst'));
    const log = recordingLogger(hostname);
    const host = { hostname, app, log: log.logger } as unknown as WorkerHost;
    const gossip = new Gossip(host, undefined, { watchers: 3 });
    cleanups.push(async () => {
      await gossip.stop();
      await app.close();
    });
    return { gossip, messages: log.messages, app };
  }

  const beat = (gossip: Gossip, hostname: string, freq = 2): void =>
    gossip.onMessage({ type: 'worker-heartbeat', hostname, clock: 1, freq, timestamp: Date.now() / 1000, pid: 1 }, delivery('worker.heartbeat', hostname));

  it('is more than five workers and more than a third of those known', () => {
    expect(isLostBurst(5, 6)).toBe(false);
    expect(isLostBurst(6, 18)).toBe(false);
    expect(isLostBurst(7, 18)).toBe(true);
    expect(isLostBurst(90, 200)).toBe(true);
  });

  it('a watcher reports a burst only for those still silent a heartbeat interval later', async () => {
    const { gossip, messages } = gossipOf('a@test');
    const lost: string[] = [];
    gossip.on('node-lost', (w) => lost.push(w.hostname));
    const ghosts = Array.from({ length: 9 }, (_, i) => `ghost${i}@test`);
    for (const ghost of ghosts) beat(gossip, ghost);
    expect(gossip.watching).toBe(true); // the lowest name: a watcher
    const t0 = Date.now() / 1000;

    gossip.periodic(t0 + 5); // all nine silent at once: doubted
    expect(lost).toEqual([]);
    expect(messages()).toContain(
      'gossip: 9 of 9 workers silent at once; this watcher may be the one behind, so they are reported lost only if still silent in 2 s',
    );
    gossip.periodic(t0 + 6); // less than a heartbeat interval later: still doubted
    expect(lost).toEqual([]);

    beat(gossip, 'ghost0@test', 10); // heard again meanwhile (alive until well after the next check)
    gossip.periodic(t0 + 7.5);
    expect(lost.sort()).toEqual(ghosts.slice(1));
    expect(messages()).toContain('missed heartbeat from ghost8@test');
    expect(messages()).not.toContain('missed heartbeat from ghost0@test');
    expect(gossip.aliveWorkers(t0 + 7.5).map((w) => w.hostname)).toEqual(['ghost0@test']);
    await Promise.resolve();
  });

  it('a watcher reports a few lost workers at once, without doubt', () => {
    const { gossip } = gossipOf('a@test');
    const lost: string[] = [];
    gossip.on('node-lost', (w) => lost.push(w.hostname));
    for (const ghost of ['x@test', 'y@test', 'z@test']) beat(gossip, ghost);
    gossip.periodic(Date.now() / 1000 + 5);
    expect(lost.sort()).toEqual(['x@test', 'y@test', 'z@test']);
  });

  it('a non-watcher keeps the watchers it hears from when one reports a burst, and does not start watching', () => {
    const { gossip, messages } = gossipOf('z@test');
    const watchers = ['a@test', 'b@test', 'c@test'];
    let clock = 1;
    const notice = (from: string, type: string, fields: Record<string, unknown>): void =>
      gossip.onNotice({ type, hostname: from, clock: clock++, timestamp: Date.now() / 1000, ...fields });
    for (const watcher of watchers) notice(watcher, 'worker-watching', { freq: 10, sw_ident: 'kq' });
    // Python workers (no sw_ident) do not count towards the watchers.
    const peers = Array.from({ length: 10 }, (_, i) => `p${i}@test`);
    for (const peer of peers) gossip.onMessage({ type: 'worker-online', hostname: peer, clock: clock++, freq: 2, timestamp: Date.now() / 1000, pid: 1 }, delivery('worker.online', peer));
    expect(gossip.watching).toBe(false);

    // a fell behind and reports b, c and eight peers lost in one notice.
    notice('a@test', 'worker-lost', { nodes: ['b@test', 'c@test', ...peers.slice(0, 8)] });
    expect(gossip.watching).toBe(false);
    expect(gossip.aliveWorkers().map((w) => w.hostname).sort()).toEqual(['a@test', 'b@test', 'c@test', 'p8@test', 'p9@test']);
    expect(messages()).toContain('reported lost by a@test: p0@test');
    expect(messages()).not.toContain('reported lost by a@test: b@test');

    // A single watcher reported lost (no burst) is forgotten as before.
    notice('a@test', 'worker-lost', { nodes: ['c@test'] });
    expect(gossip.aliveWorkers().map((w) => w.hostname)).not.toContain('c@test');
  });
});
