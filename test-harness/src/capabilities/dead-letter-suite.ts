import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { Exchange, Queue, type Channel, type DeadLetter, type DeadLetterBox, type Transport } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { testMessage } from '../test-messages';
import { waitFor } from '../wait-for';
import { capabilityOf, openTransports, suiteTitle, type CapabilitySuiteOptions } from './capability-suite-options';

export interface DeadLetterSuiteOptions extends CapabilitySuiteOptions {
  /**
   * Declares `queue` so that a message rejected from it becomes a dead letter, and resolves to the name the box keeps
   * it under (`list({ queue })`). Default: `queue` declared plainly, kept under its own name — the store keeps what
   * is rejected from a queue without a dead-letter exchange (Redis's `_kq.dead`, memory). RabbitMQ: a dead-letter
   * exchange and queue, whose name is returned.
   */
  deadLetterQueue?: (channel: Channel, queue: string) => Promise<string>;
  /** The box keeps the reason given to `reject(reason)` (Redis, memory); else any reason will do (RabbitMQ's `rejected`). */
  keepsReason?: boolean;
  /** Removes what `deadLetterQueue` declared for `queue` besides the queue itself. */
  cleanup?: (transport: Transport, queue: string) => Promise<void>;
}

/**
 * Checks a transport's `deadLetters()` against core's `DeadLetterBox` contract, with the messages a consumer rejects:
 * listed oldest first with the queue they came from, headers and body byte for byte (a look, not a take), sent back
 * to that queue by id or all at once, and purged, each scoped to one queue. Call at the top level of a test file.
 */
export function defineDeadLetterSuite(options: DeadLetterSuiteOptions): void {
  (options.skip ? describe.skip : describe)(suiteTitle('dead letters', options), () => {
    it('keeps rejected messages, oldest first, with their queue, headers, body and reason; listing takes nothing', async () => {
      await withQueues(options, 2, async ({ box, channel, queues: [a, b] }) => {
        const body = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80]); // not UTF-8: kept as bytes
        await rejectFrom(channel, a!, [testMessage('a-1', { headers: { id: 'a-1', task: 't.one' } }), testMessage(body, { headers: { id: 'a-2' }, contentType: 'application/x-bytes' })], 'not today');
        await rejectFrom(channel, b!, [testMessage('b-1', { headers: { id: 'b-1' } })], 'nor tomorrow');

        const letters = await settledList(box, a!.box, 2);
        expect(letters.map((letter) => letter.headers['id'])).toEqual(['a-1', 'a-2']);
        expect(letters.map((letter) => letter.queue)).toEqual([a!.name, a!.name]);
        expect(letters[0]!.headers['task']).toBe('t.one');
        expect(letters[0]!.body.toString()).toBe('a-1');
        expect(letters[1]!.body.equals(body)).toBe(true);
        expect(letters[1]!.contentType).toBe('application/x-bytes');
        for (const letter of letters) {
          expect(typeof letter.id).toBe('string');
          expect(letter.at === null || Number.isFinite(letter.at)).toBe(true);
          if (options.keepsReason) expect(letter.reason).toContain('not today');
          else expect(typeof letter.reason).toBe('string');
        }
        // Another queue's letters are its own; a limit gives the oldest; listing again sees the same.
        expect((await settledList(box, b!.box, 1)).map((letter) => letter.headers['id'])).toEqual(['b-1']);
        expect((await box.list({ queue: a!.box, limit: 1 })).map((letter) => letter.headers['id'])).toEqual(['a-1']);
        expect((await box.list({ queue: a!.box })).map((letter) => letter.headers['id'])).toEqual(['a-1', 'a-2']);
        expect(await channel.checkQueue(a!.name)).toMatchObject({ messageCount: 0 });
      });
    });

    it('sends letters back to the queue they came from, by id or all of them, and purges one queue', async () => {
      await withQueues(options, 2, async ({ box, channel, queues: [a, b] }) => {
        await rejectFrom(channel, a!, ['a-1', 'a-2', 'a-3'].map((id) => testMessage(id, { headers: { id } })), 'no');
        await rejectFrom(channel, b!, ['b-1', 'b-2'].map((id) => testMessage(id, { headers: { id } })), 'no');
        const letters = await settledList(box, a!.box, 3);

        // By id: only that one goes back, and it is a message like the one rejected.
        expect(await box.requeue({ queue: a!.box, ids: [letters[1]!.id] })).toBe(1);
        const back = await takeAll(channel, a!.name, 1);
        expect(back.map((delivery) => [delivery.headers['id'], delivery.body.toString()])).toEqual([['a-2', 'a-2']]);
        expect((await box.list({ queue: a!.box })).map((letter) => letter.headers['id'])).toEqual(['a-1', 'a-3']);

        // All of a queue's letters: back in their order, the box empty for that queue only.
        expect(await box.requeue({ queue: a!.box })).toBe(2);
        expect((await takeAll(channel, a!.name, 2)).map((delivery) => delivery.headers['id'])).toEqual(['a-1', 'a-3']);
        expect(await box.list({ queue: a!.box })).toEqual([]);
        expect(await box.requeue({ queue: a!.box })).toBe(0);

        // Purge: the count, and nothing left for that queue.
        expect((await settledList(box, b!.box, 2)).length).toBe(2);
        expect(await box.purge({ queue: b!.box })).toBe(2);
        expect(await box.list({ queue: b!.box })).toEqual([]);
        expect(await box.purge({ queue: b!.box })).toBe(0);
      });
    });
  });
}

interface TestQueue {
  /** The queue messages are rejected from. */
  name: string;
  /** Where the box keeps them. */
  box: string;
}

interface QueueContext {
  box: DeadLetterBox;
  channel: Channel;
  queues: TestQueue[];
}

async function withQueues(options: DeadLetterSuiteOptions, count: number, body: (context: QueueContext) => Promise<void>): Promise<void> {
  const prefix = `dead-suite-${randomUUID()}`;
  const [transport] = (await openTransports(options.create, 1)) as [Transport];
  const channel = await transport.createChannel();
  const box = capabilityOf(transport, 'deadLetters')();
  const queues: TestQueue[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const name = `${prefix}.${i}`;
      const declare = options.deadLetterQueue ?? declarePlainly;
      queues.push({ name, box: await declare(channel, name) });
    }
    await body({ box, channel, queues });
  } finally {
    for (const queue of queues) {
      await box.purge({ queue: queue.box }).catch(() => 0);
      await channel.deleteQueue(queue.name).catch(() => 0);
      await channel.deleteExchange(queue.name).catch(() => undefined);
      await options.cleanup?.(transport, queue.name);
    }
    await channel.close().catch(() => undefined);
    await transport.close().catch(() => undefined);
  }
}

async function declarePlainly(channel: Channel, queue: string): Promise<string> {
  await channel.declareQueue(new Queue(queue, { exchange: new Exchange(queue, { type: 'direct' }), routingKey: queue, durable: false }));
  return queue;
}

/** Publishes `messages` to `queue` and rejects each, in order, as a worker would. */
async function rejectFrom(channel: Channel, queue: TestQueue, messages: ReturnType<typeof testMessage>[], reason: string): Promise<void> {
  for (const message of messages) {
    await channel.publish(queue.name, queue.name, message);
    let delivery = await channel.get(queue.name);
    for (let tries = 0; !delivery && tries < 200; tries++) {
      await sleep(10);
      delivery = await channel.get(queue.name);
    }
    if (!delivery) throw new Error(`The message published to ${queue.name} never arrived.`);
    await delivery.reject(reason);
  }
}

/** The box's letters for `queue` once it holds `count` (brokers dead-letter asynchronously). */
async function settledList(box: DeadLetterBox, queue: string, count: number): Promise<DeadLetter[]> {
  let letters: DeadLetter[] = [];
  await waitFor(
    async () => (letters = await box.list({ queue })).length >= count,
    5000,
    () => `${count} dead letters under ${queue}; saw ${letters.length}`,
  );
  return letters;
}

/** Takes (and acks) `count` messages of `queue`, waiting for them. */
async function takeAll(channel: Channel, queue: string, count: number): Promise<Array<{ headers: Record<string, unknown>; body: Buffer }>> {
  const taken: Array<{ headers: Record<string, unknown>; body: Buffer }> = [];
  await waitFor(
    async () => {
      const delivery = await channel.get(queue, { noAck: true });
      if (delivery) taken.push({ headers: delivery.headers, body: delivery.body });
      return taken.length >= count;
    },
    5000,
    () => `${count} messages back in ${queue}; saw ${taken.length}`,
  );
  return taken;
}
