import { Queue, type Delivery } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { usePostgresFixture } from './postgres-test-env';

const up = await brokerReachable('postgres');

/** Counts the claim statements sent through any pool from now on. */
function countClaims(): { readonly sent: number } {
  const counter = { sent: 0 };
  const query = pg.Pool.prototype.query;
  vi.spyOn(pg.Pool.prototype, 'query').mockImplementation(function (this: pg.Pool, ...args: Parameters<typeof query>) {
    const [config] = args as unknown[];
    if (typeof config === 'object' && config !== null && 'text' in config && String(config.text).includes('SKIP LOCKED')) counter.sent++;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query);
  return counter;
}

describe.skipIf(!up)('PostgreSQL: the next claim is on its way while a full batch is handed out', () => {
  const { transport } = usePostgresFixture('pipelined');

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('sends a claim that does not wait before the call returns', async () => {
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue('pipelined.sync'));
    const store = transport.postgresStore;
    // The first claim of a store looks for due delayed rows first (and opens a connection); the ones after do not.
    await store.claim(['pipelined.sync'], { max: 5, blockMs: 0, noAck: true });
    const counter = countClaims();
    const claiming = store.claim(['pipelined.sync'], { max: 5, blockMs: 0, noAck: true });
    expect(counter.sent, 'claim statements sent before claim() returned').toBe(1);
    await claiming;
  });

  it('has the look-ahead claim in flight when the first message of a full batch reaches the handler', async () => {
    const channel = await transport.createChannel();
    await channel.declareQueue(new Queue('pipelined.consume'));
    for (let index = 0; index < 200; index++) {
      await channel.publish('', 'pipelined.consume', { body: Buffer.from(String(index)), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} });
    }
    const counter = countClaims();
    let sentAtFirst: number | undefined;
    let received = 0;
    let done: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (done = resolve));
    const consumer = await (await transport.createChannel()).consume({
      queues: ['pipelined.consume'],
      prefetch: 200,
      onMessage: (delivery: Delivery) => {
        sentAtFirst ??= counter.sent;
        void delivery.ack();
        if (++received === 200) done();
      },
    });
    await all;
    await consumer.cancel();
    // The first claim brought a full batch (64): the second was sent before the first message was handed out.
    expect(sentAtFirst).toBe(2);
  });
});
