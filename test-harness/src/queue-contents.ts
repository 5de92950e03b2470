import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { ConformanceContext } from './conformance-context';
import { bodyText, testMessage } from './test-messages';
import { ConditionTimeout } from './wait-for';

/**
 * Asserts that `queue` holds exactly the messages `expected` (by body) and consumes them. A marker published
 * behind them through the default exchange proves that everything published before has landed, so a message
 * routed where it should not be is seen rather than missed.
 */
export async function expectQueueHolds(
  context: ConformanceContext,
  queue: string,
  expected: readonly string[],
  options: { ordered?: boolean } = {},
): Promise<void> {
  const channel = await context.admin();
  const marker = `marker:${randomBytes(4).toString('hex')}`;
  await channel.publish('', queue, testMessage(marker));
  try {
    await context.waitForDepth(queue, expected.length + 1);
  } catch (error) {
    if (!(error instanceof ConditionTimeout)) throw error;
    const seen = (await context.drain(channel, queue)).map(bodyText).filter((id) => id !== marker);
    throw new Error(
      `Queue ${queue} should hold [${expected.join(', ')}] but holds [${seen.join(', ')}] (${error.message})`,
    );
  }
  const taken = (await context.drain(channel, queue)).map(bodyText).filter((id) => id !== marker);
  if (options.ordered) expect(taken, `contents of ${queue}, in order`).toEqual([...expected]);
  else expect([...taken].sort(), `contents of ${queue}`).toEqual([...expected].sort());
}
