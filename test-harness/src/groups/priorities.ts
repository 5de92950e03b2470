import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { bodyText, seededRandom, shuffled, testMessage } from '../test-messages';

interface PrioritizedId {
  id: string;
  priority: number | undefined;
}

/** Position of a priority in serving order: 0 is served first. A missing priority counts as 0. */
function servingRank(context: ConformanceContext, priority: number | undefined): number {
  const value = priority ?? 0;
  return context.capabilities.priorities === 'higher-first' ? -value : value;
}

/** Publishes a scrambled mix of every priority level (and some without a priority); returns the serving order. */
async function publishMix(context: ConformanceContext, queue: string): Promise<string[]> {
  const random = seededRandom(0x7a11);
  const mix: Array<number | undefined> = shuffled(
    [...context.priorityLevels.flatMap((level) => [level, level, level, level]), undefined, undefined, undefined],
    random,
  );
  const published: PrioritizedId[] = mix.map((priority, seq) => ({ id: `p${priority ?? 'none'}-${seq}`, priority }));
  const channel = await context.channel();
  for (const { id, priority } of published) {
    await channel.publish('', queue, testMessage(id, { properties: priority === undefined ? {} : { priority } }));
  }
  await context.waitForDepth(queue, published.length);
  // Array#sort is stable: equal priorities keep publish order (FIFO per priority).
  return [...published].sort((a, b) => servingRank(context, a.priority) - servingRank(context, b.priority)).map((entry) => entry.id);
}

/** `get` serves priorities in the transport's order, FIFO within one priority; no priority counts as 0. */
export async function checkPriorityOrderByGet(context: ConformanceContext): Promise<void> {
  const queue = await context.priorityQueue('q');
  const expected = await publishMix(context, queue);
  const taken = await context.drain(await context.channel(), queue);
  expect(taken.map(bodyText)).toEqual(expected);
}

/** A consumer (prefetch 1) is served in priority order too. */
export async function checkPriorityOrderByConsume(context: ConformanceContext): Promise<void> {
  const queue = await context.priorityQueue('q');
  const expected = await publishMix(context, queue);
  const { log } = await recordingConsumer(await context.channel(), [queue], { prefetch: 1 });
  await log.waitForCount(context, expected.length);
  log.assertNoSettleErrors();
  expect(log.ids).toEqual(expected);
}

/** A requeued message keeps its priority: the most urgent message is still served first, marked redelivered. */
export async function checkRequeueKeepsPriority(context: ConformanceContext): Promise<void> {
  const levels = [...context.priorityLevels].sort((a, b) => servingRank(context, a) - servingRank(context, b));
  const urgent = levels[0] as number;
  const routine = levels[levels.length - 1] as number;
  const queue = await context.priorityQueue('q');
  const channel = await context.channel();
  for (const id of ['routine-0', 'routine-1', 'routine-2']) {
    await channel.publish('', queue, testMessage(id, { properties: { priority: routine } }));
  }
  await channel.publish('', queue, testMessage('urgent', { properties: { priority: urgent } }));
  await context.waitForDepth(queue, 4);
  const first = await channel.get(queue);
  expect(first && bodyText(first)).toBe('urgent');
  await first?.requeue();
  await context.waitForDepth(queue, 4);
  const again = await channel.get(queue);
  expect(again && bodyText(again), 'after requeue, the urgent message is still served first').toBe('urgent');
  expect(again?.deliveryInfo.redelivered).toBe(true);
  await again?.ack();
  expect((await context.drain(channel, queue)).map(bodyText)).toEqual(['routine-0', 'routine-1', 'routine-2']);
}

/**
 * A consumer of several queues is served the most urgent message among all of them first, whichever queue holds
 * it (the virtual transports' contract; AMQP serves each queue by its own priorities and skips this).
 */
export async function checkPriorityAcrossQueues(context: ConformanceContext): Promise<void> {
  const levels = [...context.priorityLevels].sort((a, b) => servingRank(context, a) - servingRank(context, b));
  const urgent = levels[0] as number;
  const routine = levels[levels.length - 1] as number;
  const first = await context.priorityQueue('first');
  const second = await context.priorityQueue('second');
  const channel = await context.channel();
  for (const id of ['routine-0', 'routine-1']) await channel.publish('', first, testMessage(id, { properties: { priority: routine } }));
  await channel.publish('', second, testMessage('urgent', { properties: { priority: urgent } }));
  await context.waitForDepth(first, 2);
  await context.waitForDepth(second, 1);
  const { log } = await recordingConsumer(await context.channel(), [first, second], { prefetch: 1 });
  await log.waitForCount(context, 3);
  expect(log.ids[0], 'the most urgent message of all the consumed queues comes first').toBe('urgent');
}

/**
 * `checkQueueSteps` (where a channel has it) counts ready messages per priority step: the counts add up to the
 * queue's depth, and the more urgent messages sit in a lower step than the routine ones.
 */
export async function checkQueueStepsCount(context: ConformanceContext): Promise<void> {
  const levels = [...context.priorityLevels].sort((a, b) => servingRank(context, a) - servingRank(context, b));
  const urgent = levels[0] as number;
  const routine = levels[levels.length - 1] as number;
  const queue = await context.priorityQueue('steps');
  const channel = await context.channel();
  for (const priority of [urgent, urgent, routine]) await channel.publish('', queue, testMessage(`p${priority}`, { properties: { priority } }));
  await context.waitForDepth(queue, 3);
  const steps = (await channel.checkQueueSteps!(queue)).filter((entry) => entry.messageCount > 0);
  expect(steps.reduce((sum, entry) => sum + entry.messageCount, 0), 'the steps add up to the depth').toBe(3);
  expect(steps.map((entry) => entry.messageCount), 'urgent messages in the lower step, routine in a higher one').toEqual([2, 1]);
  expect(steps[0]!.step).toBeLessThan(steps[1]!.step);
}

export const prioritiesGroup: ConformanceGroup = {
  name: 'priorities',
  skipReason: (setup) => {
    if (setup.capabilities.priorities === null) return 'transport reports priorities: null';
    if (setup.priorityLevels.length < 2) return `fewer than two priority levels fit under maxPriority ${setup.capabilities.maxPriority}`;
    return undefined;
  },
  checks: [
    { name: 'get serves priorities in the reported order, FIFO within a priority', run: checkPriorityOrderByGet },
    { name: 'consume serves priorities in the reported order, FIFO within a priority', run: checkPriorityOrderByConsume },
    { name: 'a requeued message keeps its priority', run: checkRequeueKeepsPriority },
    {
      name: 'a consumer of several queues gets the most urgent message of all of them first',
      run: checkPriorityAcrossQueues,
      skipReason: (setup) => (setup.capabilities.prioritiesAcrossQueues ? undefined : 'transport does not report prioritiesAcrossQueues'),
    },
    {
      name: 'checkQueueSteps (where the channel has it) counts ready messages per priority step',
      run: async (context) => {
        const channel = await context.channel();
        if (!channel.checkQueueSteps) return; // optional: brokers with native priorities have no steps
        await checkQueueStepsCount(context);
      },
    },
  ],
};
