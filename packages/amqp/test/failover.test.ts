/**
 * Kombu's broker failover: a URL list (`amqp://…h1//;amqp://…h2//`) is tried in order; a broker that cannot be reached
 * is skipped at connect, and a connection that is lost moves to the next broker. Two TCP forwarders in front of the
 * test broker stand in for a cluster's nodes: one is shut down, and the transport carries on through the other.
 */
import { once } from 'node:events';
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { Queue } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { afterAll, describe, expect, it } from 'vitest';
import { AmqpTransport, BrokerAlternates } from '../src/index';
import { AMQP_URL, message, namer, waitFor } from './helpers';

const up = await brokerReachable('amqp');
const name = namer('failover');

/** A TCP forwarder to the broker, which can be shut down (listener and every connection through it). */
class Forwarder {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.#server = createServer((client) => {
      const upstream = tcpConnect(target.port, target.host);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('close', () => this.#sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
  }

  async start(): Promise<this> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    this.port = (this.#server.address() as { port: number }).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

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
  const forwarders: Forwarder[] = [];
  const transports: AmqpTransport[] = [];
  const urlThrough = (port: number): string => `amqp://${target.username}:${target.password}@127.0.0.1:${port}//`;

  afterAll(async () => {
    for (const transport of transports) await transport.close().catch(() => undefined);
    for (const forwarder of forwarders) await forwarder.stop().catch(() => undefined);
  });

  it('skips a broker that cannot be reached when connecting', async () => {
    const live = await new Forwarder({ host: target.hostname, port: Number(target.port || 5672) }).start();
    forwarders.push(live);
    const transport = new AmqpTransport(`${urlThrough(1)};${urlThrough(live.port)}`);
    transports.push(transport);
    await transport.createChannel();
    expect(transport.describe().port).toBe(live.port);
  });

  it('moves to the next broker when the connection is lost, and keeps delivering', async () => {
    const first = await new Forwarder({ host: target.hostname, port: Number(target.port || 5672) }).start();
    const second = await new Forwarder({ host: target.hostname, port: Number(target.port || 5672) }).start();
    forwarders.push(first, second);
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

    await first.stop(); // the node dies
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
