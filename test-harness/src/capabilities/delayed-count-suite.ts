import { randomUUID } from 'node:crypto';
import { ChannelClosed, Queue, type Channel, type DelayedCount, type Transport } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { testMessage } from '../test-messages';
import { waitFor } from '../wait-for';
import { openTransports, suiteTitle, type CapabilitySuiteOptions } from './capability-suite-options';

export interface DelayedCountSuiteOptions extends CapabilitySuiteOptions {
  /**
   * Whether the broker can say which queue each delayed message is for (`byQueue`: Redis's delayed set, memory);
   * RabbitMQ's delay ladder cannot, and reports the total only.
   */
  byQueue: boolean;
  /** How long a due message may take to leave the count and reach its queue. Default 10000 ms. */
  dueWithinMs?: number;
  /** Removes the transport's delay structure (RabbitMQ: its ladder). */
  cleanup?: (transport: Transport) => Promise<void>;
}

/**
 * Checks a transport's `Channel.countDelayed()` against core's contract: the delayed (ETA/countdown) messages the
 * broker holds, not the ready ones, by target queue where the broker can tell (a queue of several priority steps is
 * one queue); a due message leaves the count for its queue; a closed channel refuses. `create` must give each
 * transport a delay structure of its own (a key prefix, a ladder prefix), so the counts are the suite's alone.
 * Call at the top level of a test file.
 */
export function defineDelayedCountSuite(options: DelayedCountSuiteOptions): void {
  (options.skip ? describe.skip : describe)(suiteTitle('delayed count', options), () => {
    it('counts the messages the broker holds for later, not the ready ones, by queue where it can tell', async () => {
      await withChannel(options, async (channel, names) => {
        const empty = await count(channel);
        expect(empty).toEqual(options.byQueue ? { total: 0, byQueue: {} } : { total: 0 });
        // A queue with priority steps and a name that is not ASCII.
        const [a, b] = [names('a'), names('é')];
        await channel.declareQueue(new Queue(a, { durable: false, maxPriority: 9 }));
        await channel.declareQueue(new Queue(b, { durable: false }));
        await channel.publish('', a, testMessage('a-1'), { delay: 60_000 });
        await channel.publish('', a, testMessage('a-2', { properties: { priority: 9 } }), { delay: 3_600_000 });
        await channel.publish('', b, testMessage('b-1'), { delay: 60_000 });
        await channel.publish('', a, testMessage('a-now'));
        let seen: DelayedCount | undefined;
        await waitFor(async () => (seen = await count(channel)).total === 3, 5000, () => `3 delayed messages; saw ${JSON.stringify(seen)}`);
        expect(seen).toEqual(options.byQueue ? { total: 3, byQueue: { [a]: 2, [b]: 1 } } : { total: 3 });
        expect((await channel.checkQueue(a)).messageCount).toBe(1);
      });
    });

    it('a due message leaves the count and reaches its queue', async () => {
      await withChannel(options, async (channel, names) => {
        const queue = names('due');
        await channel.declareQueue(new Queue(queue, { durable: false }));
        await channel.publish('', queue, testMessage('later'), { delay: 3_600_000 });
        await channel.publish('', queue, testMessage('soon'), { delay: 500 });
        const dueWithinMs = options.dueWithinMs ?? 10_000;
        let seen: DelayedCount | undefined;
        await waitFor(async () => (await channel.checkQueue(queue)).messageCount === 1, 500 + dueWithinMs, 'the due message in its queue');
        await waitFor(async () => (seen = await count(channel)).total === 1, dueWithinMs, () => `1 delayed message left; saw ${JSON.stringify(seen)}`);
        if (options.byQueue) expect(seen?.byQueue).toEqual({ [queue]: 1 });
        expect((await channel.get(queue, { noAck: true }))?.body.toString()).toBe('soon');
      });
    });

    it('a closed channel refuses to count', async () => {
      await withChannel(options, async (channel) => {
        await channel.close();
        await expect(count(channel)).rejects.toBeInstanceOf(ChannelClosed);
      });
    });
  });
}

function count(channel: Channel): Promise<DelayedCount> {
  if (!channel.countDelayed) throw new Error('The channel has no countDelayed(): the suite needs one.');
  return channel.countDelayed();
}

async function withChannel(options: DelayedCountSuiteOptions, body: (channel: Channel, names: (suffix: string) => string) => Promise<void>): Promise<void> {
  const prefix = `delayed-suite-${randomUUID()}`;
  const declared: string[] = [];
  const names = (suffix: string): string => {
    declared.push(`${prefix}.${suffix}`);
    return `${prefix}.${suffix}`;
  };
  const [transport] = (await openTransports(options.create, 1)) as [Transport];
  const channel = await transport.createChannel();
  try {
    await body(channel, names);
  } finally {
    const cleaner = await transport.createChannel().catch(() => undefined);
    for (const queue of declared) await cleaner?.deleteQueue(queue).catch(() => 0);
    await cleaner?.close().catch(() => undefined);
    await channel.close().catch(() => undefined);
    await options.cleanup?.(transport);
    await transport.close().catch(() => undefined);
  }
}
