// What only RabbitMQ's beat lease does; the BeatLease contract itself is checked in capabilities.test.ts.
import { randomUUID } from 'node:crypto';
import { brokerReachable } from '@kq/test-harness';
import { describe, expect, it } from 'vitest';
import { AmqpTransport } from '../src/index';
import { AMQP_URL } from './helpers';

const up = await brokerReachable('amqp');

describe.skipIf(!up)('the RabbitMQ beat lease', () => {
  it('declares its queue classic on one broker and quorum on a cluster URL, and says what to do when they clash', async () => {
    const group = `beat-lease-${randomUUID()}`;
    const transports = [new AmqpTransport(AMQP_URL), new AmqpTransport(`${AMQP_URL};${AMQP_URL}`)];
    await Promise.all(transports.map((transport) => transport.connect()));
    const single = transports[0]!.beatLease({ group, settleMs: 100 });
    const clustered = transports[1]!.beatLease({ group, settleMs: 100 });
    try {
      expect([single.queueType, clustered.queueType]).toEqual(['classic', 'quorum']);
      await new Promise((resolve, reject) => {
        single.start({ elected: resolve, deposed: () => undefined, error: () => undefined }).catch(reject);
      });
      // The same group's queue exists as a classic queue: the cluster-configured beat is told how to move on.
      await expect(clustered.start({ elected: () => undefined, deposed: () => undefined, error: () => undefined })).rejects.toThrow(
        /exists as a classic queue.*rabbitmqctl delete_queue kq\.beat\..*queueType: 'classic'/,
      );
    } finally {
      await Promise.all([single.stop(), clustered.stop()]);
      const channel = await transports[0]!.createChannel();
      await channel.deleteQueue(single.queue).catch(() => undefined);
      await Promise.all(transports.map((transport) => transport.close().catch(() => undefined)));
    }
  });
});
