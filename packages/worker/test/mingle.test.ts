// Mingle (docs/wire.md#mingle-heartbeats-and-gossip): at start a worker says hello, adopts its neighbours' clock and
// merges their revoked sets; its own hello carries its revoked set with float timestamps. Two kq workers on the memory
// transport.
import { Mailbox, type BroadcastOptions, type MailboxNode } from '@kq/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../src/app/app';
import { clusterSteps } from '../src/cluster/cluster-steps';
import { syncWithNode } from '../src/cluster/mingle';
import type { Worker } from '../src/runtime/worker';
import { memoryApp, memoryBrokerName, recordingLogger } from './fixtures/cluster/helpers';

describe('Mingle', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  function newWorker(broker: string, hostname: string): { app: App; worker: Worker; messages: () => string[] } {
    const app = memoryApp(broker);
    const log = recordingLogger(hostname);
    const worker = app.worker({ hostname, logger: log.logger, steps: clusterSteps({ mingle: true, heartbeatInterval: 60, mingleTimeout: 0.2 }) });
    cleanups.push(async () => {
      await worker.stop();
      await app.close();
    });
    return { app, worker, messages: log.messages };
  }

  it('a worker starting after another adopts its clock and its revoked tasks, and hands over its own', async () => {
    const broker = memoryBrokerName('mingle');
    const first = newWorker(broker, 'first@test');
    await first.worker.start();
    expect(first.messages()).toEqual(expect.arrayContaining(['mingle: searching for neighbors', 'mingle: all alone']));
    first.worker.state.revoked.add('revoked-while-you-were-away');
    first.app.clock.adjust(5000);

    const second = newWorker(broker, 'second@test');
    second.worker.state.revoked.add('revoked-by-second'); // e.g. loaded from its state file
    await second.worker.start();

    expect(second.app.clock.value).toBeGreaterThan(5000);
    expect(second.worker.state.revoked.has('revoked-while-you-were-away')).toBe(true);
    expect(first.worker.state.revoked.has('revoked-by-second')).toBe(true);
    expect(second.messages()).toEqual(expect.arrayContaining(['mingle: searching for neighbors', 'mingle: sync with 1 nodes', 'mingle: sync complete']));
    expect(first.messages()).toContain('sync with second@test');
  });

  it('does not ask again when nobody listened, though a node starting too listens by then', async () => {
    // Workers of a fleet started together: the first hello finds no node listening, and by the time a second hello
    // would go out another starting worker listens. Asked Celery's way, it answers and the asker waits a full
    // timeout of silence after it (here 0.2 s; 1 s by default), to learn nothing that worker did not just learn too.
    const broker = memoryBrokerName('mingle-race');
    const me = newWorker(broker, 'me@test');
    const hellos: string[] = [];
    const broadcast = Mailbox.prototype.broadcast;
    const spy = vi.spyOn(Mailbox.prototype, 'broadcast').mockImplementation(async function (this: Mailbox, method: string, options?: BroadcastOptions) {
      const replies = await broadcast.call(this, method, options);
      if (method !== 'hello') return replies;
      hellos.push(options?.arguments?.['kq_watchers_only'] === true ? 'watchers only' : 'everyone');
      if (hellos.length === 1) {
        const late = me.app.control.mailbox.node('late@test', { hello: () => ({ clock: 7, revoked: {} }) });
        await late.listen();
        cleanups.push(() => late.close());
      }
      return replies;
    });
    cleanups.push(async () => spy.mockRestore());

    await me.worker.start();
    expect(hellos).toEqual(['watchers only']);
    expect(me.messages()).toContain('mingle: all alone');
  });

  it('ignores its own reply and logs the neighbours it cannot sync with', async () => {
    const broker = memoryBrokerName('mingle-odd');
    const me = newWorker(broker, 'me@test');
    const nodes: MailboxNode[] = [];
    const fake = (hostname: string, hello: () => unknown): void => {
      const node = me.app.control.mailbox.node(hostname, { hello });
      nodes.push(node);
    };
    fake('me@test', () => ({ clock: 1_000_000, revoked: {} })); // an old node of ours that still answers
    fake('garbage@test', () => 'not a mapping');
    fake('badrevoked@test', () => ({ clock: 7, revoked: { x: ['soon', 'x'] } }));
    fake('error@test', () => {
      throw new Error('cannot');
    });
    for (const node of nodes) await node.listen();
    cleanups.push(async () => {
      for (const node of nodes) await node.close();
    });

    await me.worker.start();
    expect(me.app.clock.value).toBeLessThan(1_000_000);
    expect(me.messages()).toContain('mingle: sync with 3 nodes');
    expect(me.messages().find((m) => m.startsWith('mingle: sync with garbage@test failed:'))).toMatch(/TypeError/);
    expect(me.messages().find((m) => m.startsWith('mingle: sync with badrevoked@test failed:'))).toMatch(/Expecting float timestamp/);
    expect(me.messages().some((m) => m.startsWith('mingle: sync with error@test failed'))).toBe(false); // {error} = no clock: forward
  });

  it('a reply without a clock forwards ours; one with a clock adjusts to it', () => {
    const calls: string[] = [];
    const worker = {
      app: { clock: { adjust: (n: number) => calls.push(`adjust ${n}`), forward: () => calls.push('forward') } },
      state: { revoked: { update: () => calls.push('update') } },
    } as unknown as Worker;
    syncWithNode(worker, { clock: 42 });
    syncWithNode(worker, { error: "KeyError('hello')" });
    syncWithNode(worker, { clock: 0, revoked: { a: [1.5, 'a'] } });
    expect(calls).toEqual(['adjust 42', 'forward', 'forward', 'update']);
  });

  it('is off by default on transports Celery does not mingle on (memory)', async () => {
    const broker = memoryBrokerName('mingle-off');
    const app = memoryApp(broker);
    const log = recordingLogger();
    const worker = app.worker({ hostname: 'quiet@test', logger: log.logger, steps: clusterSteps({ heartbeatInterval: 60 }) });
    cleanups.push(async () => {
      await worker.stop();
      await app.close();
    });
    await worker.start();
    expect(log.messages().some((m) => m.startsWith('mingle:'))).toBe(false);
  });
});
