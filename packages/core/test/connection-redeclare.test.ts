import { afterEach, describe, expect, it } from 'vitest';
import { Connection } from '../src/connection';
import { Consumer } from '../src/consumer';
import { ConnectionLost } from '../src/errors';
import { Exchange } from '../src/exchange';
import { MemoryBroker } from '../src/memory/memory-broker';
import { MemoryTransport } from '../src/memory/memory-transport';
import { Producer } from '../src/producer';
import { Queue } from '../src/queue';
import type { Channel } from '../src/transport';

/** A memory transport whose channels count the declarations made on them. */
class CountingTransport extends MemoryTransport {
  declarations = 0;
  lastChannel: Channel | undefined;

  override async createChannel(): Promise<Channel> {
    const channel = await super.createChannel();
    this.lastChannel = channel;
    const declareQueue = channel.declareQueue.bind(channel);
    const declareExchange = channel.declareExchange.bind(channel);
    channel.declareQueue = (queue) => {
      this.declarations++;
      return declareQueue(queue);
    };
    channel.declareExchange = (exchange) => {
      this.declarations++;
      return declareExchange(exchange);
    };
    return channel;
  }
}

describe('Connection: the topology on new channels', () => {
  const exchange = new Exchange('rd', { type: 'direct' });
  const queue = new Queue('rd.q', { exchange, routingKey: 'k' });
  let connection: Connection | undefined;

  afterEach(async () => {
    await connection?.close();
    connection = undefined;
  });

  async function declared(broker: string): Promise<{ transport: CountingTransport; connection: Connection }> {
    MemoryBroker.reset(broker);
    const transport = new CountingTransport({ broker });
    connection = new Connection(transport);
    await connection.declare(exchange);
    await connection.declare(queue);
    transport.declarations = 0;
    return { transport, connection };
  }

  it('is not declared again on a new channel while nothing failed', async () => {
    const { transport, connection } = await declared('rd-none');
    for (let i = 0; i < 3; i++) await connection.createChannel();
    expect(transport.declarations).toBe(0);
  });

  it('is declared again on the next new channel after the connection was lost, and only on that one', async () => {
    const { transport, connection } = await declared('rd-lost');
    // A restarted broker without persistence lost it all.
    MemoryBroker.named('rd-lost').bindings.clear();
    transport.emit('disconnected', new ConnectionLost('socket closed'));
    const channel = await connection.createChannel();
    const again = transport.declarations;
    expect(again).toBeGreaterThanOrEqual(2); // the exchange and the queue (with its binding)
    await connection.createChannel();
    expect(transport.declarations).toBe(again);
    await new Producer(connection, { exchange }).publish('routed', { routingKey: 'k' });
    expect((await channel.get('rd.q'))?.decode()).toBe('routed');
  });

  it("is declared again on a consumer's new channel when its old one was lost", async () => {
    const { transport, connection } = await declared('rd-consumer');
    const other = new Queue('rd.other');
    const consumer = new Consumer(connection, { queues: [other], onMessage: (_body, delivery) => void delivery.ack() });
    const recovered = new Promise<void>((resolve) => consumer.once('recovered', resolve));
    consumer.on('error', () => undefined);
    await consumer.consume();
    const consumerChannel = transport.lastChannel;
    transport.declarations = 0;
    // The broker lost the bindings, and the consumer's channel was closed under it: after recovering, the rest of the
    // topology (here rd.q's binding, which the consumer does not declare itself) is declared again as well.
    MemoryBroker.named('rd-consumer').bindings.clear();
    consumerChannel?.emit('close', new ConnectionLost('channel closed by the broker'));
    await recovered;
    expect(transport.declarations).toBeGreaterThanOrEqual(3);
    await new Producer(connection, { exchange }).publish('routed', { routingKey: 'k' });
    expect((await (await connection.createChannel()).get('rd.q'))?.decode()).toBe('routed');
    await consumer.cancel();
  });
});
