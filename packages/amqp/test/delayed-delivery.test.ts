import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Exchange, Queue, QueueNotFound, type Channel, type Delivery } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { delayRoutingKey, type AmqpTransport } from '../src/index';
import { AMQP_URL, message, namer, newTransport, waitFor } from './helpers';

const KOMBU_LADDER = fileURLToPath(new URL('./interop/kombu_ladder.py', import.meta.url));
const pythonKombu = (() => {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import kombu']);
    return true;
  } catch {
    return false;
  }
})();

const up = await brokerReachable('amqp');
const name = namer('delay');

interface Arrival {
  delivery: Delivery;
  at: number;
}

describe.skipIf(!up)("delayed delivery through Kombu's native delayed delivery ladder", () => {
  let transport: AmqpTransport;
  let channel: Channel;
  const queues: string[] = [];
  const exchanges: string[] = [];

  async function queue(label: string, options: ConstructorParameters<typeof Queue>[1] = {}): Promise<string> {
    const queueName = name(label);
    queues.push(queueName);
    await channel.declareQueue(new Queue(queueName, options));
    return queueName;
  }

  async function arrivals(queueName: string): Promise<{ list: Arrival[]; cancel: () => Promise<void> }> {
    const list: Arrival[] = [];
    const handle = await channel.consume({
      queues: [queueName],
      onMessage: (delivery) => {
        list.push({ delivery, at: Date.now() });
        void delivery.ack();
      },
    });
    return { list, cancel: () => handle.cancel() };
  }

  beforeAll(async () => {
    // A ladder of this file's own (Kombu's prefix), deleted at the end: the default celery_delayed_* is shared by every
    // client of the vhost, Celery's too.
    transport = newTransport({ connectionName: name('conn'), delayLadderPrefix: name('ladder') });
    channel = await transport.createChannel();
    const started = Date.now();
    await transport.declareDelayLadder();
    console.log(`[kq amqp] declared the delay ladder in ${Date.now() - started} ms`);
  });

  afterAll(async () => {
    for (const queueName of queues) await channel.deleteQueue(queueName).catch(() => undefined);
    for (const exchange of exchanges) await channel.deleteExchange(exchange).catch(() => undefined);
    await transport.deleteDelayLadder();
    await transport.close();
  });

  it('lands a 2 s and a 5 s delay within a second of due, never early', async () => {
    const target = await queue('two-five', { durable: false });
    const { list, cancel } = await arrivals(target);
    const start = Date.now();
    await Promise.all([
      channel.publish('', target, message('five'), { delay: 5000 }),
      channel.publish('', target, message('two'), { delay: 2000 }),
    ]);
    await waitFor('the 2 s message within 1 s of due', () => list.length >= 1, 2000 + 1000 - (Date.now() - start));
    await waitFor('the 5 s message within 1 s of due', () => list.length >= 2, 5000 + 1000 - (Date.now() - start));
    await cancel();
    expect(list.map((arrival) => arrival.delivery.body.toString())).toEqual(['two', 'five']);
    expect(list[0]!.at - start).toBeGreaterThanOrEqual(2000 - 20);
    expect(list[1]!.at - start).toBeGreaterThanOrEqual(5000 - 20);
    expect(list[0]!.delivery.deliveryInfo).toMatchObject({ exchange: '', routingKey: target, queue: target, redelivered: false });
    expect(list[0]!.delivery.deliveryInfo.deliveryCount).toBeUndefined();
  });

  it('lands mixed delays in due order, through a topic exchange into a quorum queue, with the real routing key', async () => {
    const exchange = name('events');
    exchanges.push(exchange);
    const target = await queue('ordered', { queueType: 'quorum', exchange: new Exchange(exchange, { type: 'topic', durable: false }), routingKey: 'job.*' });
    const { list, cancel } = await arrivals(target);
    // Whole seconds (the ladder's precision), published in a shuffled order.
    const delays = [3000, 1000, 2000];
    await Promise.all(delays.map((delay) => channel.publish(exchange, `job.${delay}`, message(String(delay)), { delay })));
    await waitFor('every delayed message', () => list.length === delays.length, 3000 + 2000);
    await cancel();
    expect(list.map((arrival) => Number(arrival.delivery.body.toString()))).toEqual([...delays].sort((a, b) => a - b));
    for (const { delivery } of list) {
      expect(delivery.deliveryInfo.exchange).toBe(exchange);
      expect(delivery.deliveryInfo.routingKey).toBe(`job.${delivery.body.toString()}`);
    }
  });

  it('rounds a sub-second delay up to a whole second, never early', async () => {
    const target = await queue('round-up', { durable: false });
    const { list, cancel } = await arrivals(target);
    const start = Date.now();
    await channel.publish('', target, message('soon'), { delay: 300 });
    await waitFor('the delayed message', () => list.length === 1, 3000);
    await cancel();
    expect(list[0]!.at - start).toBeGreaterThanOrEqual(1000 - 20);
  });

  it('delivers to a queue on a direct exchange (which Kombu leaves out) by binding the queue to the delivery exchange', async () => {
    const exchange = name('direct');
    exchanges.push(exchange);
    const target = await queue('direct-target', { durable: false, exchange: new Exchange(exchange, { type: 'direct', durable: false }), routingKey: 'work' });
    const { list, cancel } = await arrivals(target);
    await channel.publish(exchange, 'work', message('direct'), { delay: 1000 });
    await waitFor('the delayed message', () => list.length === 1, 4000);
    await cancel();
    expect(list[0]!.delivery.deliveryInfo).toMatchObject({ exchange, routingKey: 'work', queue: target });
  });

  it('delivers a message another client put in the ladder (as Kombu publishes it) once the queue is prepared as Celery prepares it', async () => {
    const exchange = name('celery-like');
    exchanges.push(exchange);
    const target = await queue('prepared', { durable: false, exchange: new Exchange(exchange, { type: 'topic', durable: false }), routingKey: 'tasks' });
    await transport.prepareDelayedDelivery([new Queue(target, { durable: false, exchange: new Exchange(exchange, { type: 'topic', durable: false }), routingKey: 'tasks' })]);
    const { list, cancel } = await arrivals(target);
    // Raw: straight into level 27 with the 28-digit key, no kq header — what Celery 5.5's send_task does.
    await channel.publish(transport.ladder.levels[0]!.name, delayRoutingKey(1, 'tasks'), message('from-celery'));
    await waitFor('the delayed message', () => list.length === 1, 4000);
    await cancel();
    expect(list[0]!.delivery.body.toString()).toBe('from-celery');
    expect(list[0]!.delivery.deliveryInfo.routingKey).toBe('tasks');
  });

  it('keeps headers and properties (the per-message expiration is dropped) and strips its own bookkeeping', async () => {
    const target = await queue('props', { durable: false, maxPriority: 9 });
    const { list, cancel } = await arrivals(target);
    await channel.publish(
      '',
      target,
      message('kept', { headers: { task: 't', retries: 2 }, properties: { correlationId: 'c1', priority: 5, deliveryMode: 2, expiration: '100' } }),
      { delay: 300 },
    );
    await waitFor('the delayed message', () => list.length === 1, 3000);
    await cancel();
    const { delivery } = list[0]!;
    expect(delivery.headers).toEqual({ task: 't', retries: 2 });
    expect(delivery.properties).toEqual({ correlationId: 'c1', priority: 5, deliveryMode: 2 });
  });

  it('refuses a delayed message for a default-exchange queue that does not exist', async () => {
    await expect(channel.publish('', name('nowhere'), message('x'), { delay: 1000 })).rejects.toBeInstanceOf(QueueNotFound);
  });
});

describe.skipIf(!up || !pythonKombu)("kq's ladder is Kombu's ladder", () => {
  it.each(['quorum', 'classic'] as const)('declares over one Kombu declared, and Kombu over kq\'s, with no difference in arguments (%s)', async (type) => {
    for (const first of ['kombu', 'kq'] as const) {
      const prefix = name(`decl-${type}-${first}`);
      const transport = newTransport({ connectionName: name('decl'), delayLadderPrefix: prefix, delayQueueType: type });
      const kombu = (): string => execFileSync('/usr/bin/python3', [KOMBU_LADDER, AMQP_URL, prefix, type], { encoding: 'utf8', timeout: 60_000 });
      try {
        if (first === 'kombu') expect(kombu()).toContain('declared');
        await transport.declareDelayLadder(); // a PRECONDITION_FAILED here means an argument differs from Kombu's
        if (first === 'kq') expect(kombu()).toContain('declared');
      } finally {
        await transport.deleteDelayLadder();
        await transport.close();
      }
    }
  }, 120_000);
});
