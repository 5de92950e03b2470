import { brokerReachable, defineBeatLeaseSuite, defineCycleRegisterSuite } from '@kq/test-harness';
import type { AmqpTransport } from '../src/index';
import { newTransport } from './helpers';

// The RabbitMQ transport's capabilities against the shared suites.
const up = await brokerReachable('amqp');
const skip = !up && 'RabbitMQ is not reachable';

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
