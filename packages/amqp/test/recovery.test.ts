import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Exchange, Queue, StaleDeliveryError, type Channel, type Delivery } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { AmqpTransport } from '../src/index';
import { closeConnections, closeConnectionsNamed, connectionPids, message, namer, newTransport, rabbitmqctl, sleep, waitFor } from './helpers';

const up = await brokerReachable('amqp');
// Closing a connection from the broker side needs rabbitmqctl (the management plugin is not enabled here).
const hasCtl = up && (await rabbitmqctl('list_connections', 'pid')) !== undefined;
if (up && !hasCtl) console.warn('[kq amqp] skipping broker-side recovery tests: rabbitmqctl is not available');
const name = namer('recovery');

describe.skipIf(!hasCtl)('recovery from a connection the broker closed', () => {
  let transport: AmqpTransport;
  let channel: Channel;
  const connectionName = name('conn');
  const events: string[] = [];
  const queues: string[] = [];
  const exchanges: string[] = [];

  beforeAll(async () => {
    transport = newTransport({ connectionName, reconnectPolicy: { intervalStart: 50, intervalStep: 100, intervalMax: 500 } });
    transport.on('connected', () => events.push('connected'));
    transport.on('disconnected', () => events.push('disconnected'));
    channel = await transport.createChannel();
  });

  afterAll(async () => {
    for (const queueName of queues) await channel.deleteQueue(queueName).catch(() => undefined);
    for (const exchange of exchanges) await channel.deleteExchange(exchange).catch(() => undefined);
    await transport.close();
  });

  it('delivers every confirmed message when the connection is closed mid-publish and mid-consume', async () => {
    const queueName = name('work');
    queues.push(queueName);
    await channel.declareQueue(new Queue(queueName, { durable: true }));

    const received = new Set<string>();
    let staleSettles = 0;
    const handle = await channel.consume({
      queues: [queueName],
      prefetch: 50,
      onMessage: (delivery) => {
        received.add(delivery.body.toString());
        // Ack a little later, so some acks land after the connection died.
        setTimeout(() => {
          delivery.ack().catch((error: unknown) => {
            if (error instanceof StaleDeliveryError) staleSettles++;
            else throw error;
          });
        }, 2);
      },
    });

    // Publish from 16 concurrent publishers until the connection was killed (after 500 confirms), came back,
    // and 500 more were confirmed on the new connection.
    const pids = await connectionPids(connectionName);
    expect(pids.length).toBeGreaterThan(0);
    const confirmed: string[] = [];
    const failed: unknown[] = [];
    let killed = false;
    let confirmedAtReconnect: number | undefined;
    let reconnected = false;
    transport.once('connected', () => {
      reconnected = true;
      confirmedAtReconnect = confirmed.length;
    });
    let next = 0;
    const done = (): boolean => (reconnected && confirmed.length - (confirmedAtReconnect ?? 0) >= 500) || next >= 50_000;
    const publisher = async (): Promise<void> => {
      while (!done()) {
        const id = `m${next++}`;
        try {
          await channel.publish('', queueName, message(id));
          confirmed.push(id);
        } catch (error) {
          failed.push(error);
        }
        if (!killed && confirmed.length >= 500) {
          killed = true;
          void closeConnections(pids);
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, publisher));
    const total = next;

    expect(killed).toBe(true);
    await waitFor('the broker-side close to be noticed', () => events.includes('disconnected'), 15_000);
    await waitFor(
      'every confirmed message to be delivered',
      () => confirmed.every((id) => received.has(id)),
      20_000,
    );
    await handle.cancel();
    expect(failed).toEqual([]); // recovery took far less than recoveryTimeout, so nothing had to fail
    expect(confirmed.length).toBe(total);
    expect(reconnected).toBe(true);
    expect(events.filter((event) => event === 'connected').length).toBeGreaterThanOrEqual(2);
    console.log(`[kq amqp] recovery: ${confirmed.length} confirmed, ${received.size} distinct delivered, ${staleSettles} stale acks refused`);
  }, 60_000);

  it('re-declares exclusive auto-delete topology and resumes its consumer with the same tag', async () => {
    const exchange = name('replies');
    exchanges.push(exchange);
    const queueName = name('reply-queue');
    await channel.declareQueue(
      new Queue(queueName, { exchange: new Exchange(exchange, { type: 'direct', durable: false }), routingKey: 'r', durable: false, exclusive: true, autoDelete: true }),
    );
    const received: Delivery[] = [];
    const handle = await channel.consume({
      queues: [queueName],
      consumerTag: name('tag'),
      onMessage: (delivery) => {
        received.push(delivery);
      },
    });
    await channel.publish(exchange, 'r', message('before'));
    await waitFor('the first reply', () => received.length === 1);
    const connectedBefore = events.filter((event) => event === 'connected').length;

    expect(await closeConnectionsNamed(connectionName)).toBeGreaterThan(0);
    await waitFor('the reconnect', () => events.filter((event) => event === 'connected').length > connectedBefore, 15_000);
    // The delivery from the dead channel cannot be settled any more; the broker requeued it (exclusive queue: deleted with it).
    await expect(received[0]!.ack()).rejects.toBeInstanceOf(StaleDeliveryError);

    await waitFor('the publish after recovery to route', async () => {
      await channel.publish(exchange, 'r', message('after'), { mandatory: true }).catch(() => undefined);
      await sleep(100);
      return received.some((delivery) => delivery.body.toString() === 'after');
    }, 15_000);
    const after = received.find((delivery) => delivery.body.toString() === 'after')!;
    expect(after.deliveryInfo.consumerTag).toBe(handle.tag);
    await after.ack();
    await handle.cancel();
  }, 60_000);
});
