import { randomUUID } from 'node:crypto';
import { Exchange, Queue } from '@kq/core';
import { brokerReachable, defineBeatLeaseSuite, defineCycleRegisterSuite, defineDeadLetterSuite, defineDelayedCountSuite } from '@kq/test-harness';
import type { AmqpTransport } from '../src/index';
import { namer, newTransport } from './helpers';

// The RabbitMQ transport's capabilities against the shared suites.
const up = await brokerReachable('amqp');
const skip = !up && 'RabbitMQ is not reachable';
const ladderName = namer('capabilities');

defineBeatLeaseSuite({
  name: 'amqp',
  create: () => newTransport(),
  skip,
  // A leader that crashed: its connection drops, so RabbitMQ makes the next consumer of the lease queue active.
  loseLeadership: async (_lease, transport) => {
    (transport as AmqpTransport).terminate();
  },
  cleanup: async (transport, group) => {
    const channel = await transport.createChannel();
    await channel.deleteQueue(`kq.beat.${group}`).catch(() => undefined);
    await channel.close();
  },
});
defineCycleRegisterSuite({
  name: 'amqp',
  create: () => newTransport(),
  skip,
  cleanup: async (transport, key) => {
    const channel = await transport.createChannel();
    await channel.deleteQueue(`${key}.periodic.register`).catch(() => undefined);
    await channel.close();
  },
});
defineDeadLetterSuite({
  name: 'amqp',
  create: () => newTransport(),
  skip,
  // RabbitMQ dead-letters through the queue's arguments, to a queue of the user's: the box reads that queue.
  deadLetterQueue: async (channel, queue) => {
    const dlx = new Exchange(`${queue}.dlx`, { type: 'direct' });
    await channel.declareQueue(new Queue(`${queue}.dlq`, { exchange: dlx, routingKey: `${queue}.dlq`, durable: false }));
    await channel.declareQueue(
      new Queue(queue, { exchange: new Exchange(queue, { type: 'direct' }), routingKey: queue, durable: false, deadLetterExchange: dlx.name, deadLetterRoutingKey: `${queue}.dlq` }),
    );
    return `${queue}.dlq`;
  },
  cleanup: async (transport, queue) => {
    const channel = await transport.createChannel();
    await channel.deleteQueue(`${queue}.dlq`).catch(() => undefined);
    await channel.deleteExchange(`${queue}.dlx`).catch(() => undefined);
    await channel.close();
  },
});
defineDelayedCountSuite({
  name: 'amqp',
  // A ladder of each transport's own (Kombu's prefix): the default one is every client's in the vhost, so its count is theirs too.
  create: () => newTransport({ delayLadderPrefix: ladderName(randomUUID().slice(0, 8)) }),
  skip,
  byQueue: false,
  cleanup: (transport) => (transport as AmqpTransport).deleteDelayLadder(),
});
