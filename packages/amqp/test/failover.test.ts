/**
 * Kombu's broker failover: a URL list (`amqp://…h1//;amqp://…h2//`) is tried in order; a broker that cannot be reached
 * is skipped at connect, and a connection that is lost moves to the next broker. Two TCP proxies in front of the
 * test broker stand in for a cluster's nodes: one is shut down, and the transport carries on through the other.
 */
import { Queue } from '@kq/core';
import { brokerReachable, CuttingProxy } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { AmqpTransport, BrokerAlternates } from '../src/index';
import { AMQP_URL, message, namer, waitFor } from './helpers';

const up = await brokerReachable('amqp');
const name = namer('failover');

describe('broker alternates (failover_strategy)', () => {
  it('round-robin tries the brokers in the order given, then starts over', () => {
    const brokers = new BrokerAlternates('amqp://h1//;amqp://h2//;amqp://h3//');
    expect([brokers.current, brokers.next(), brokers.next(), brokers.next()].map((url) => url.hostname)).toEqual(['h1', 'h2', 'h3', 'h1']);
  });

  it('shuffle tries every broker once per round, in a random order', () => {
    const brokers = new BrokerAlternates('amqp://h1//;amqp://h2//;amqp://h3//', 'shuffle', () => 0);
    const round = [brokers.current, brokers.next(), brokers.next()].map((url) => url.hostname);
    expect(new Set(round)).toEqual(new Set(['h1', 'h2', 'h3']));
    expect(round).not.toEqual(['h1', 'h2', 'h3']);
  });

  it('refuses an unknown strategy', () => {
    expect(() => new BrokerAlternates('amqp://h1//', 'random' as never)).toThrow(/round-robin' or 'shuffle/);
  });
});

describe.skipIf(!up)('AMQP failover across a broker list', () => {
  const target = new URL(AMQP_URL);
  const proxies: CuttingProxy[] = [];
  const transports: AmqpTransport[] = [];
  const urlThrough = (port: number): string => `amqp://${target.username}:${target.password}@127.0.0.1:${port}//`;

  afterAll(async () => {
    for (const transport of transports) await transport.close().catch(() => undefined);
    for (const proxy of proxies) await proxy.close().catch(() => undefined);
  });

  /** A proxy to the test broker, standing in for one node: its port. */
  async function node(): Promise<{ proxy: CuttingProxy; port: number }> {
    const proxy = new CuttingProxy({ host: target.hostname, port: Number(target.port || 5672) });
    proxies.push(proxy);
    return { proxy, port: await proxy.listen() };
  }

  it('skips a broker that cannot be reached when connecting', async () => {
    const live = await node();
    const transport = new AmqpTransport(`${urlThrough(1)};${urlThrough(live.port)}`);
    transports.push(transport);
    await transport.createChannel();
    expect(transport.describe().port).toBe(live.port);
  });

  it('moves to the next broker when the connection is lost, and keeps delivering', async () => {
    const first = await node();
    const second = await node();
    const transport = new AmqpTransport(`${urlThrough(first.port)};${urlThrough(second.port)}`, {
      reconnectPolicy: { intervalStart: 50, intervalStep: 50, intervalMax: 200 },
    });
    transports.push(transport);
    transport.on('error', () => undefined);
    const channel = await transport.createChannel();
    const queue = name('work');
    await channel.declareQueue(new Queue(queue, { durable: true }));
    await channel.publish('', queue, message('before'));
    expect(transport.describe().port).toBe(first.port);

    await first.proxy.close(); // the node dies
    await waitFor('the transport on the second broker', () => transport.supervisor.isConnected && transport.describe().port === second.port);
    const after = await transport.createChannel();
    await after.publish('', queue, message('after'));
    const bodies: string[] = [];
    for (;;) {
      const delivery = await after.get(queue, { noAck: true });
      if (!delivery) break;
      bodies.push(delivery.body.toString());
    }
    expect(bodies).toEqual(['before', 'after']);
    await after.deleteQueue(queue);
  });
});
