// A queue with an expiry (Celery's pidbox queues: x-expires 10 s) can be gone between a consumer declaring it and
// consuming it, when the process was starved of CPU meanwhile (a fleet of 200 starting on 2 cores). The consumer
// declares it again and consumes, where the worker used to stop with "Queue ... does not exist".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Connection, Consumer, Queue, type Channel } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { AmqpTransport } from '../src/index';
import { message, namer, newTransport, waitFor } from './helpers';

const up = await brokerReachable('amqp');
const name = namer('consume-expired');

describe.skipIf(!up)('a consumer whose queue expired before it consumed', () => {
  let transport: AmqpTransport;
  let admin: Channel;

  beforeAll(async () => {
    transport = newTransport({ connectionName: name('conn') });
    admin = await transport.createChannel();
  });

  afterAll(async () => {
    await transport.close();
  });

  it('declares the queue again and consumes from it', async () => {
    const queue = new Queue(name('node.pidbox'), { durable: false, autoDelete: true, expires: 10_000 });
    // The queue expires, as far as the consumer can tell, just before each of its first `consume` calls on AMQP.
    const createChannel = transport.createChannel.bind(transport);
    let deletions = 0;
    transport.createChannel = async () => {
      const channel = await createChannel();
      const consume = channel.consume.bind(channel);
      channel.consume = async (options) => {
        if (deletions < 1) {
          deletions++;
          await admin.deleteQueue(queue.name);
        }
        return consume(options);
      };
      return channel;
    };
    const connection = new Connection(transport);
    const received: string[] = [];
    const consumer = new Consumer(connection, {
      queues: [queue],
      decode: false,
      onMessage: (_body, delivery) => void (received.push(delivery.body.toString()), delivery.ack()),
    });
    const errors: Error[] = [];
    consumer.on('error', (error) => errors.push(error));
    try {
      await consumer.consume();
      expect(deletions).toBe(1);
      expect(consumer.isConsuming).toBe(true);
      await admin.publish('', queue.name, message('after'));
      await waitFor('the message', () => received.length === 1);
      expect(received).toEqual(['after']);
      expect(errors).toEqual([]);
    } finally {
      transport.createChannel = createChannel;
      await consumer.cancel();
    }
  });
});
