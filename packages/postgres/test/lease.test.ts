import { Queue, StaleDeliveryError, type Delivery } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import type { PostgresTransport } from '../src/index';
import { dropTables, makeTransport, rawClient, uniqueTables } from './postgres-test-env';

const up = await brokerReachable('postgres');

async function waitFor<T>(probe: () => Promise<T | null>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`nothing within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!up)('PostgreSQL leases', () => {
  const tables = uniqueTables('lease');
  const transports: PostgresTransport[] = [];
  const transport = (options: Parameters<typeof makeTransport>[1]): PostgresTransport => {
    const made = makeTransport(tables, options);
    transports.push(made);
    return made;
  };

  afterAll(async () => {
    await Promise.all(transports.map((made) => made.close().catch(() => undefined)));
    const client = rawClient();
    await dropTables(client, tables);
    await client.end();
  });

  const publishOne = async (owner: PostgresTransport, queue: string): Promise<void> => {
    const channel = await owner.createChannel();
    await channel.declareQueue(new Queue(queue));
    await channel.publish('', queue, { body: Buffer.from('x'), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} });
  };

  it('a claim whose lease ran out is taken back: its ack is refused and the message is delivered again', async () => {
    // No heartbeat within the test: the lease runs out after 300 ms and the other store's sweep takes it back.
    const holder = transport({ leaseMs: 300, leaseRenewIntervalMs: 60_000, sweepIntervalMs: 60_000 });
    const sweeper = transport({ leaseMs: 300, sweepIntervalMs: 100 });
    await publishOne(holder, 'lease.a');
    const held = (await (await holder.createChannel()).get('lease.a')) as Delivery;
    expect(held).not.toBeNull();
    const other = await sweeper.createChannel();
    const again = await waitFor(() => other.get('lease.a'), 5000);
    expect(again.deliveryInfo.redelivered).toBe(true);
    await expect(held.ack()).rejects.toBeInstanceOf(StaleDeliveryError);
    await again.ack();
    expect(await other.get('lease.a')).toBeNull();
  });

  it('a heartbeat keeps a claim held well past its lease', async () => {
    const holder = transport({ leaseMs: 300, leaseRenewIntervalMs: 80 });
    const sweeper = transport({ leaseMs: 300, sweepIntervalMs: 50 });
    await publishOne(holder, 'lease.b');
    const held = (await (await holder.createChannel()).get('lease.b')) as Delivery;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(await (await sweeper.createChannel()).get('lease.b')).toBeNull();
    await held.ack();
  });
});
