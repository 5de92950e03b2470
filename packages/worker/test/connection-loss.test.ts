/**
 * A connection lost under a busy worker: what the broker gives back (every unacked delivery of the dead channel) must
 * run once, from its redelivery — never also from the copy the worker had reserved but not yet started.
 */
import { randomUUID } from 'node:crypto';
import { brokerReachable } from '@kq/test-harness';
import { afterEach, describe, expect, it } from 'vitest';
import { closeConnections, connectionPids, rabbitmqctl } from '../../amqp/test/helpers';
import { App } from '../src/app/app';
import { Logger } from '../src/log/logger';
import type { Worker } from '../src/runtime/worker';

const BROKER = 'amqp://guest:guest@127.0.0.1:5672';
const up = await brokerReachable('amqp', BROKER);
const hasCtl = up && (await rabbitmqctl('list_vhosts', 'name')) !== undefined;

async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(!hasCtl)('connection loss on RabbitMQ', () => {
  let app: App | undefined;
  let worker: Worker | undefined;
  afterEach(async () => {
    await worker?.stop({ cold: true });
    await app?.close();
  });

  it('drops the reserved requests of the dead channel before they start: each task runs once', async () => {
    const ns = `kqloss${randomUUID().slice(0, 8)}`;
    const connectionName = `kq-${ns}`;
    app = new App('loss', { broker: BROKER, taskDefaultQueue: `${ns}.q`, controlExchange: ns, brokerTransportOptions: { connectionName } });
    const runs = new Map<number, number>();
    app.task('loss.slow', async (_ctx, id: number) => {
      runs.set(id, (runs.get(id) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      return id;
    });
    // One at a time with a window of ten: nine reserved requests wait behind the running one when the link drops.
    worker = app.worker({ hostname: `loss@${ns}`, concurrency: 1, prefetchMultiplier: 10, logger: new Logger('loss', { level: 'critical', sink: () => undefined }) });
    await worker.start();
    const ids = Array.from({ length: 20 }, (_, i) => i);
    for (const id of ids) await app.sendTask('loss.slow', [id]);
    await waitFor(() => runs.size >= 2, 15_000, 'two tasks to start');
    await waitFor(() => worker!.state.reserved.size >= 5, 15_000, 'a full window to be reserved');
    const pids = await connectionPids(connectionName);
    expect(await closeConnections(pids)).toBeGreaterThan(0);
    await waitFor(() => ids.every((id) => runs.has(id)), 30_000, 'every task to run');
    await new Promise((resolve) => setTimeout(resolve, 500)); // any duplicate would have started by now
    // Acked when started (early acks): a task that started before the loss is not redelivered, one that did not
    // start is redelivered and runs from there only.
    expect([...runs].filter(([, count]) => count > 1)).toEqual([]);
  }, 60_000);
});
