import { brokerReachable } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { ReadyListener } from '../src/ready-listener';
import { POSTGRES_URL, rawClient } from './postgres-test-env';

const up = await brokerReachable('postgres');

describe.skipIf(!up)('ReadyListener', () => {
  const channel = `kqt_ready_${process.pid}`;
  const listener = new ReadyListener({ connectionString: POSTGRES_URL, channel, onDue: () => undefined, logger: { warn: () => undefined } });
  const client = rawClient();

  afterAll(async () => {
    await listener.stop();
    await client.end();
  });

  it('wakes a claim for its own queues only: a worker’s other consumers are not sent to the database for nothing', async () => {
    await listener.start();
    let taskQueueWoken = false;
    const taskQueue = listener.waitForReady(60_000, undefined, listener.generation(['1']), ['1']).then(() => (taskQueueWoken = true));
    const anyQueue = listener.waitForReady(60_000, undefined, listener.generation(null), null);
    const controlQueue = listener.waitForReady(60_000, undefined, listener.generation(['2']), ['2']);
    const before = listener.generation(['1']);
    await client.query('SELECT pg_notify($1, $2)', [channel, '2']);
    // Both wake in the one notification's handler: had queue 1's waiter woken, it would have by now.
    await Promise.all([controlQueue, anyQueue]);
    await Promise.resolve();
    expect(taskQueueWoken).toBe(false);
    expect(listener.generation(['1'])).toBe(before);
    await client.query('SELECT pg_notify($1, $2)', [channel, '1']);
    await taskQueue;
    expect(listener.generation(['1'])).toBe(before + 1);
  });

  it('returns at once when a wake-up for the queues came since the generation was read', async () => {
    const since = listener.generation(['3', '4']);
    const other = listener.waitForReady(60_000, undefined, listener.generation(['4']), ['4']);
    await client.query('SELECT pg_notify($1, $2)', [channel, '4']);
    await other;
    await listener.waitForReady(60_000, undefined, since, ['3', '4']);
  });
});
