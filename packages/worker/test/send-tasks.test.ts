import { EncodeError, MemoryBroker } from '@kq/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { decodeTaskMessage } from '../src/protocol/index';

let seq = 0;

describe('App.sendTasks and Task.applyMany (bulk sending)', () => {
  let app: App;
  let broker: string;

  beforeEach(() => {
    seq++;
    broker = `send-tasks-${seq}`;
    MemoryBroker.reset(broker);
    app = new App('test', {
      broker: `memory://${broker}`,
      backend: `memory://${broker}`,
      taskRoutes: { 'reports.*': 'reports' },
      etaStrategy: 'broker',
    });
  });

  afterEach(async () => {
    await app.close();
  });

  const drain = async (queue: string): Promise<Array<{ name: string; args: unknown[]; id: string }>> => {
    const channel = await app.connection.channel();
    const found = [];
    for (let delivery = await channel.get(queue); delivery; delivery = await channel.get(queue)) {
      const message = decodeTaskMessage(delivery);
      found.push({ name: message.name, args: message.args, id: message.id });
      delivery.ack();
    }
    return found;
  };

  it('routes each call as sendTask would, keeps call order per queue, and returns results in call order', async () => {
    const results = await app.sendTasks([
      { name: 'add', args: [1, 1] },
      { name: 'reports.daily', args: ['a'] },
      { name: 'add', args: [2, 2], kwargs: { z: 1 } },
      { name: 'add', args: [3, 3], options: { queue: 'reports' } },
    ]);
    expect(results).toHaveLength(4);
    expect(new Set(results.map((result) => result.id)).size).toBe(4);
    const celery = await drain('celery');
    expect(celery.map((message) => message.args)).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(celery.map((message) => message.id)).toEqual([results[0]?.id, results[2]?.id]);
    expect((await drain('reports')).map((message) => [message.name, message.args])).toEqual([
      ['reports.daily', ['a']],
      ['add', [3, 3]],
    ]);
  });

  it('holds calls with a countdown in the broker, each on its own', async () => {
    await app.sendTasks([
      { name: 'add', args: [1], options: { countdown: 60 } },
      { name: 'add', args: [2] },
    ]);
    expect((await drain('celery')).map((message) => message.args)).toEqual([[2]]);
  });

  it('runs every task sent with applyMany on a worker and gives each result', async () => {
    const double = app.task('double', (_ctx, x: number) => x * 2);
    const worker = app.worker({ hostname: `bulk${seq}@test`, loglevel: 'error' });
    await worker.start();
    try {
      const results = await double.applyMany([[1], [2], [3]]);
      expect(await Promise.all(results.map((result) => result.get({ timeout: 5000 })))).toEqual([2, 4, 6]);
    } finally {
      await worker.stop({ cold: true });
    }
  });

  it('refuses one taskId for many calls', async () => {
    const noop = app.task('noop', () => null);
    await expect(noop.applyMany([[], []], { taskId: 'same' })).rejects.toThrow('cannot share one taskId');
  });

  it('uses the backend configured after a close, not the one it had before', async () => {
    const before = await app.backend();
    await app.close();
    MemoryBroker.reset(`${broker}-next`);
    app.conf.backend = `memory://${broker}-next`;
    const [result] = await app.sendTasks([{ name: 'add', args: [1] }]);
    expect(await result?.resultBackend()).toBe(await app.backend());
    expect(await result?.resultBackend()).not.toBe(before);
  });

  it('hands a large bulk send to the transport in steps of 250, each while the next is built, in call order', async () => {
    const calls = Array.from({ length: 600 }, (_, index) => ({ name: 'add', args: [index] }));
    // The router runs once per message built: how many were built when each step reached the transport.
    let built = 0;
    app.conf.taskRoutes = () => {
      built++;
      return undefined;
    };
    const producer = app.producer;
    const publishMessages = producer.publishMessages.bind(producer);
    const steps: Array<{ size: number; builtBefore: number }> = [];
    producer.publishMessages = (messages, params) => {
      steps.push({ size: messages.length, builtBefore: built });
      return publishMessages(messages, params);
    };
    const results = await app.sendTasks(calls);
    expect(steps).toEqual([
      { size: 250, builtBefore: 250 },
      { size: 250, builtBefore: 500 },
      { size: 100, builtBefore: 600 },
    ]);
    const queued = await drain('celery');
    expect(queued.map((message) => message.args[0])).toEqual(calls.map((call) => call.args[0]));
    expect(queued.map((message) => message.id)).toEqual(results.map((result) => result.id));
  });

  it('rejects when a step fails while the next is built, without an unhandled rejection', async () => {
    const producer = app.producer;
    const publishMessages = producer.publishMessages.bind(producer);
    let step = 0;
    producer.publishMessages = (messages, params) => (++step === 1 ? Promise.reject(new Error('the broker refused step 1')) : publishMessages(messages, params));
    await expect(app.sendTasks(Array.from({ length: 300 }, (_, index) => ({ name: 'add', args: [index] })))).rejects.toThrow('the broker refused step 1');
    // The step after it was still sent (as the doc says: when it rejects, some may have been sent).
    expect((await drain('celery')).length).toBe(50);
  });

  it('rejects on a call it cannot send, after the steps before it were stored', async () => {
    const calls: Array<{ name: string; args: unknown[] }> = Array.from({ length: 300 }, (_, index) => ({ name: 'add', args: [index] }));
    const loop: Record<string, unknown> = {};
    loop['self'] = loop;
    calls[280] = { name: 'add', args: [loop] }; // no JSON for a cycle
    await expect(app.sendTasks(calls)).rejects.toThrow(EncodeError);
    expect((await drain('celery')).map((message) => message.args[0])).toEqual(calls.slice(0, 250).map((call) => call.args[0]));
  });

  it('sends nothing for no calls', async () => {
    expect(await app.sendTasks([])).toEqual([]);
  });
});
