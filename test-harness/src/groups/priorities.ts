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

/** The most urgent and the most routine of the suite's priority levels, in the transport's serving order. */
function urgentAndRoutine(context: ConformanceContext): [number, number] {
  const levels = [...context.priorityLevels].sort((a, b) => servingRank(context, a) - servingRank(context, b));
  return [levels[0] as number, levels[levels.length - 1] as number];
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
 * A requeued routine message goes back to its own priority step, not the default one: requeue a routine message,
 * publish an urgent one, and the urgent one is served first. (The check above requeues a message that is already
 * in the most urgent step, where a store that restores into the default step looks right.)
 */
export async function checkRequeuedRoutineStaysBehindUrgent(context: ConformanceContext): Promise<void> {
  const [urgent, routine] = urgentAndRoutine(context);
  const queue = await context.priorityQueue('q');
  const channel = await context.channel();
  await channel.publish('', queue, testMessage('routine', { properties: { priority: routine } }));
  await context.waitForDepth(queue, 1);
  const taken = await channel.get(queue);
  expect(taken && bodyText(taken)).toBe('routine');
  await taken?.requeue();
  await context.waitForDepth(queue, 1);
  await channel.publish('', queue, testMessage('urgent', { properties: { priority: urgent } }));
  await context.waitForDepth(queue, 2);
  const served = await context.drain(channel, queue);
  expect(served.map(bodyText), `a requeued priority-${routine} message and a priority-${urgent} one published after it`).toEqual(['urgent', 'routine']);
  expect(served[1]?.deliveryInfo.redelivered).toBe(true);
}

/** Messages at every priority step (and without a priority), one batch per step; resolves to the count. */
async function publishAtEveryStep(context: ConformanceContext, queue: string, afterEach?: (published: number) => Promise<void>): Promise<number> {
  const channel = await context.channel();
  let published = 0;
  const batches: Array<number | undefined> = [undefined, ...context.priorityLevels];
  for (const [index, priority] of batches.entries()) {
    // A different count per step, so a count that misses or doubles one step is off.
    for (let n = 0; n <= index; n++) {
      await channel.publish('', queue, testMessage(`p${priority ?? 'none'}-${n}`, { properties: priority === undefined ? {} : { priority } }));
      published++;
    }
    await afterEach?.(published);
  }
  return published;
}

/** `purgeQueue` removes ready messages at every priority step, and reports them all. */
export async function checkPurgeEveryStep(context: ConformanceContext): Promise<void> {
  const queue = await context.priorityQueue('purged');
  const published = await publishAtEveryStep(context, queue);
  await context.waitForDepth(queue, published);
  const channel = await context.channel();
  expect(await channel.purgeQueue(queue), 'messages purgeQueue reports, with messages at every priority step').toBe(published);
  await context.waitForDepth(queue, 0);
  expect(await channel.get(queue), 'get() after the purge').toBeNull();
}

/**
 * `checkQueue` counts ready messages at every priority step, and agrees with the broker probe (where there is one)
 * after each step's messages landed.
 */
export async function checkQueueCountsEveryStep(context: ConformanceContext): Promise<void> {
  const queue = await context.priorityQueue('counted');
  const channel = await context.channel();
  const probe = context.setup.probe;
  await publishAtEveryStep(context, queue, async (published) => {
    await context.waitForDepth(queue, published);
    let reported = -1;
    await context.waitFor(
      async () => (reported = (await channel.checkQueue(queue)).messageCount) === published,
      () => `checkQueue(${queue}) to count the ${published} ready message(s) published so far, across priority steps; it counts ${reported}`,
    );
    if (probe) expect(await probe.queueDepth(queue), 'the broker probe, next to checkQueue').toBe(reported);
  });
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
    { name: 'a requeued routine message stays behind an urgent one published after it', run: checkRequeuedRoutineStaysBehindUrgent },
    { name: 'purge removes and reports messages at every priority step', run: checkPurgeEveryStep },
    { name: 'checkQueue counts every priority step and agrees with the broker probe', run: checkQueueCountsEveryStep },
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
