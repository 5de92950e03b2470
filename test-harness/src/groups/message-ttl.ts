import { Exchange } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { bodyText, messageIds } from '../test-messages';

/** Messages older than the queue's `messageTtl` expire: the queue empties on its own. */
export async function checkMessageTtlExpiry(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q', { messageTtl: context.ms(200) });
  const channel = await context.channel();
  await context.publishIds(channel, '', queue, messageIds('m', 3));
  await context.waitForDepth(queue, 0);
  expect(await channel.get(queue), 'get() after the messages expired').toBeNull();
}

/** Expired messages go to the queue's dead-letter exchange, marked with an `expired` x-death record. */
export async function checkMessageTtlDeadLetters(context: ConformanceContext): Promise<void> {
  const dlx = await context.declareExchange('dlx', { type: 'direct' });
  const dead = await context.declareQueue('dead', { exchange: new Exchange(dlx, { type: 'direct' }), routingKey: 'expired' });
  const queue = await context.declareQueue('q', { messageTtl: context.ms(200), deadLetterExchange: dlx, deadLetterRoutingKey: 'expired' });
  const channel = await context.channel();
  const ids = messageIds('m', 3);
  await context.publishIds(channel, '', queue, ids);
  await context.waitForDepth(dead, ids.length);
  await context.waitForDepth(queue, 0);
  const taken = await context.drain(channel, dead);
  expect(taken.map(bodyText)).toEqual(ids);
  const deaths = taken[0]?.headers['x-death'];
  expect(Array.isArray(deaths), 'x-death header on an expired message').toBe(true);
  expect((deaths as Array<Record<string, unknown>>)[0]).toMatchObject({ reason: 'expired', queue });
}

export const messageTtlGroup: ConformanceGroup = {
  name: 'message TTL',
  skipReason: (setup) => (setup.capabilities.messageTtl ? undefined : 'transport reports messageTtl: false'),
  checks: [
    { name: 'messages expire after the queue messageTtl', run: checkMessageTtlExpiry },
    {
      name: 'expired messages are dead-lettered',
      run: checkMessageTtlDeadLetters,
      skipReason: (setup) => (setup.capabilities.deadLettering ? undefined : 'transport reports deadLettering: false'),
    },
  ],
};
