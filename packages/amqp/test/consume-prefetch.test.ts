import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, QueueNotFound, type Channel, type Delivery } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { ConsumerCancelled, type AmqpTransport } from '../src/index';
import { message, namer, newTransport, sleep, waitFor } from './helpers';

const up = await brokerReachable('amqp');
const name = namer('prefetch');

describe.skipIf(!up)('consumers: prefetch, cancel notifications', () => {
  let transport: AmqpTransport;
  let channel: Channel;
  const queues: string[] = [];

  async function queue(label: string, options: ConstructorParameters<typeof Queue>[1] = {}, messages = 0): Promise<string> {
    const queueName = name(label);
    queues.push(queueName);
    await channel.declareQueue(new Queue(queueName, options));
    for (let index = 0; index < messages; index++) await channel.publish('', queueName, message(`${label}-${index}`));
    return queueName;
  }

  /** A consumer that holds deliveries until told to settle them, tracking the most it ever held at once. */
  async function holdingConsumer(queueNames: string[], prefetch: number) {
    const held: Delivery[] = [];
    const seen: string[] = [];
    let most = 0;
    const handle = await channel.consume({
      queues: queueNames,
      prefetch,
      onMessage: (delivery) => {
        held.push(delivery);
        seen.push(delivery.body.toString());
        most = Math.max(most, held.length);
      },
    });
    const settle = async (count: number): Promise<void> => {
      for (const delivery of held.splice(0, count)) await delivery.ack();
    };
    return { handle, held, seen, settle, most: () => most };
  }

  beforeAll(async () => {
    transport = newTransport({ connectionName: name('conn'), resubscribeInterval: 100 });
    channel = await transport.createChannel();
  });

  afterAll(async () => {
    for (const queueName of queues) await channel.deleteQueue(queueName).catch(() => undefined);
    await transport.close();
  });

  it('never holds more than prefetch across several queues, classic and quorum alike', async () => {
    const classicA = await queue('multi-a', { durable: false }, 15);
    const classicB = await queue('multi-b', { durable: false }, 15);
    const quorum = await queue('multi-q', { queueType: 'quorum' }, 15);
    const consumer = await holdingConsumer([classicA, classicB, quorum], 4);
    await waitFor('4 held', () => consumer.held.length === 4);
    await sleep(300); // give the broker every chance to over-deliver
    expect(consumer.held.length).toBe(4);
    while (consumer.seen.length < 45) {
      await consumer.settle(1 + (consumer.seen.length % 3));
      await sleep(5);
      expect(consumer.held.length).toBeLessThanOrEqual(4);
    }
    await consumer.settle(consumer.held.length);
    expect(consumer.most()).toBe(4);
    expect(new Set(consumer.seen).size).toBe(45);
    expect(consumer.seen.filter((body) => body.startsWith('multi-q')).length).toBe(15);
    await consumer.handle.cancel();
  });

  it.each([
    ['classic', { durable: false }],
    ['quorum', { queueType: 'quorum' as const }],
  ])('applies setPrefetch live on a %s queue, up and down', async (label, options) => {
    const target = await queue(`live-${label}`, options, 20);
    const consumer = await holdingConsumer([target], 2);
    await waitFor('2 held', () => consumer.held.length === 2);
    await sleep(200);
    expect(consumer.held.length).toBe(2);
    await consumer.handle.setPrefetch(6);
    expect(consumer.handle.prefetch).toBe(6);
    await waitFor('6 held after raising prefetch', () => consumer.held.length === 6);
    await sleep(200);
    expect(consumer.held.length).toBe(6);
    await consumer.handle.setPrefetch(1);
    await consumer.settle(6);
    await waitFor('1 held after lowering prefetch', () => consumer.held.length === 1);
    await sleep(200);
    expect(consumer.held.length).toBe(1);
    while (consumer.seen.length < 20) {
      await consumer.settle(1);
      await waitFor('the next delivery', () => consumer.held.length === 1 || consumer.seen.length === 20);
    }
    await consumer.settle(consumer.held.length);
    expect(new Set(consumer.seen).size).toBe(20);
    await consumer.handle.cancel();
  });

  it('gives buffered deliveries back on cancel and keeps handed-out ones settleable', async () => {
    const a = await queue('cancel-a', { durable: false }, 5);
    const b = await queue('cancel-b', { durable: false }, 5);
    const consumer = await holdingConsumer([a, b], 3);
    await waitFor('3 held', () => consumer.held.length === 3);
    await sleep(100);
    await consumer.handle.cancel();
    expect(consumer.held.length).toBe(3);
    await consumer.settle(3);
    // The buffered ones were handed back on cancel; nothing was lost, nothing more was delivered.
    const remaining = async (): Promise<number> => (await channel.checkQueue(a)).messageCount + (await channel.checkQueue(b)).messageCount;
    await waitFor('the 7 unsettled messages back in their queues', async () => (await remaining()) === 7);
    expect(consumer.seen.length).toBe(3);
  });

  it('calls onCancel when the broker cancels (queue deleted) and consumes again once the queue is back', async () => {
    const target = await queue('vanishing', { durable: false });
    const received: string[] = [];
    const cancellations: Error[] = [];
    const handle = await channel.consume({
      queues: [target],
      onMessage: (delivery) => {
        received.push(delivery.body.toString());
        void delivery.ack();
      },
      onCancel: (reason) => cancellations.push(reason),
    });
    await channel.publish('', target, message('before'));
    await waitFor('the first message', () => received.length === 1);

    const other = newTransport({ connectionName: name('deleter') });
    const otherChannel = await other.createChannel();
    await otherChannel.deleteQueue(target);
    await waitFor('the cancel notification', () => cancellations.length === 1);
    expect(cancellations[0]).toBeInstanceOf(ConsumerCancelled);
    expect((cancellations[0] as ConsumerCancelled).queue).toBe(target);

    await otherChannel.declareQueue(new Queue(target, { durable: false }));
    await otherChannel.publish('', target, message('after'));
    await waitFor('the message after the queue came back', () => received.length === 2);
    expect(received).toEqual(['before', 'after']);
    await other.close();
    await handle.cancel();
  });

  it('fails with QueueNotFound when a queue does not exist, and the channel keeps working', async () => {
    const existing = await queue('exists', { durable: false }, 1);
    await expect(channel.consume({ queues: [existing, name('missing')], onMessage: () => undefined })).rejects.toBeInstanceOf(QueueNotFound);
    expect((await channel.checkQueue(existing)).messageCount).toBe(1);
  });

  it('does not stop when a handler throws; the delivery stays unsettled', async () => {
    const target = await queue('throws', { durable: false }, 2);
    const errors: Error[] = [];
    const bodies: string[] = [];
    const onError = (error: Error): void => void errors.push(error);
    channel.on('error', onError);
    const handle = await channel.consume({
      queues: [target],
      prefetch: 5,
      onMessage: (delivery) => {
        bodies.push(delivery.body.toString());
        if (bodies.length === 1) throw new Error('handler failed');
        void delivery.ack();
      },
    });
    await waitFor('both messages', () => bodies.length === 2);
    expect(errors.map((error) => error.message)).toContain('handler failed');
    channel.off('error', onError);
    await handle.cancel();
  });
});
