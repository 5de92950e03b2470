import type { Channel, Delivery } from '@kq/core';
import fc from 'fast-check';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { QueueModel, type SettleAction } from '../model/queue-model';
import { bodyText, testMessage } from '../test-messages';

const QUEUE_COUNT = 3;

export type ModelOperation =
  | { kind: 'publish'; queue: number; priority: number | undefined }
  | { kind: 'get'; queue: number; then: SettleAction | 'hold' | 'noAck' }
  | { kind: 'settleHeld'; pick: number; action: SettleAction }
  | { kind: 'purge'; queue: number }
  | { kind: 'reopenChannel' };

/** Random operation sequences over a few queues, with priorities from the levels the transport distinguishes. */
export function operationsArbitrary(priorities: readonly number[] | null, maxLength: number): fc.Arbitrary<ModelOperation[]> {
  const queue = fc.integer({ min: 0, max: QUEUE_COUNT - 1 });
  const priority: fc.Arbitrary<number | undefined> = priorities && priorities.length > 0 ? fc.constantFrom(...priorities) : fc.constant(undefined);
  const action = fc.constantFrom<SettleAction>('ack', 'requeue', 'reject');
  const operation: fc.Arbitrary<ModelOperation> = fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('publish' as const), queue, priority }) },
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('get' as const),
        queue,
        then: fc.constantFrom<SettleAction | 'hold' | 'noAck'>('ack', 'requeue', 'reject', 'hold', 'hold', 'noAck'),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('settleHeld' as const), pick: fc.nat(), action }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('purge' as const), queue }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'reopenChannel' as const }) },
  );
  // size 'max': lengths spread over the whole range, not biased to a handful of operations.
  return fc.array(operation, { maxLength, size: 'max' });
}

function describeOperation(operation: ModelOperation): string {
  switch (operation.kind) {
    case 'publish':
      return `publish to q${operation.queue}${operation.priority === undefined ? '' : ` priority ${operation.priority}`}`;
    case 'get':
      return `get from q${operation.queue} then ${operation.then}`;
    case 'settleHeld':
      return `${operation.action} held #${operation.pick}`;
    case 'purge':
      return `purge q${operation.queue}`;
    case 'reopenChannel':
      return 'close the channel and open another';
  }
}

/**
 * Applies one operation sequence to the transport and to `QueueModel` side by side. After every step the queue
 * depths must agree; every delivery must be one the model allows, with the right `redelivered` flag; at the end
 * the queues must hold exactly what the model holds.
 */
export async function runModelSequence(context: ConformanceContext, operations: readonly ModelOperation[], run: number): Promise<void> {
  const queues: string[] = [];
  for (let index = 0; index < QUEUE_COUNT; index++) queues.push(await context.priorityQueue(`run${run}.q${index}`));
  const model = new QueueModel(QUEUE_COUNT, context.capabilities.priorities);
  let channel: Channel = await context.channel();
  const held: Delivery[] = [];
  let sequence = 0;
  const fail = (step: number, problem: string): never => {
    const trail = operations.slice(0, step + 1).map((operation, index) => `${index}: ${describeOperation(operation)}`);
    throw new Error(`model test, step ${step} (${describeOperation(operations[step] as ModelOperation)}): ${problem}\n  ${trail.join('\n  ')}`);
  };
  const getAndCheck = async (step: number, queue: number, noAck: boolean): Promise<Delivery | null> => {
    const allowed = model.allowedNext(queue);
    const delivery = await channel.get(queues[queue] as string, { noAck });
    if (!delivery) {
      if (allowed.size > 0) fail(step, `get() returned null; the model expects one of [${[...allowed.keys()].join(', ')}]`);
      return null;
    }
    const id = bodyText(delivery);
    if (!allowed.has(id)) {
      fail(step, `delivered ${id}; the model allows ${allowed.size === 0 ? 'nothing (queue empty)' : `[${[...allowed.keys()].join(', ')}]`}`);
    }
    if (delivery.deliveryInfo.redelivered !== allowed.get(id)) {
      fail(step, `${id} arrived with redelivered=${delivery.deliveryInfo.redelivered}, expected ${String(allowed.get(id))}`);
    }
    return delivery;
  };

  for (const [step, operation] of operations.entries()) {
    switch (operation.kind) {
      case 'publish': {
        const id = `r${run}-${sequence++}`;
        const properties = operation.priority === undefined ? {} : { priority: operation.priority };
        await channel.publish('', queues[operation.queue] as string, testMessage(id, { properties }));
        model.publish(operation.queue, id, operation.priority);
        break;
      }
      case 'get': {
        const delivery = await getAndCheck(step, operation.queue, operation.then === 'noAck');
        if (!delivery) break;
        const message = model.take(operation.queue, bodyText(delivery));
        if (operation.then === 'hold') {
          held.push(delivery);
          model.hold(message);
        } else if (operation.then === 'requeue') {
          await delivery.requeue();
          model.returnMessage(message);
        } else if (operation.then === 'ack' || operation.then === 'reject') {
          await delivery[operation.then]();
        }
        break;
      }
      case 'settleHeld': {
        if (held.length === 0) break;
        const index = operation.pick % held.length;
        const [delivery] = held.splice(index, 1);
        await (delivery as Delivery)[operation.action]();
        model.settleHeld(index, operation.action);
        break;
      }
      case 'purge': {
        const purged = await channel.purgeQueue(queues[operation.queue] as string);
        const expected = model.purge(operation.queue);
        if (purged !== expected) fail(step, `purgeQueue reported ${purged} messages; the model had ${expected} ready`);
        break;
      }
      case 'reopenChannel': {
        await channel.close();
        held.length = 0;
        model.closeChannel();
        channel = await context.channel();
        break;
      }
    }
    for (const [index, queue] of queues.entries()) {
      await context.waitForDepth(queue, model.depth(index), 2_000).catch((error: unknown) =>
        fail(step, error instanceof Error ? error.message : String(error)),
      );
    }
  }

  // Closing returns whatever is held; then every queue must drain to exactly the model's contents, in an allowed order.
  await channel.close();
  held.length = 0;
  model.closeChannel();
  channel = await context.channel();
  const finalStep = operations.length;
  for (const [index, queue] of queues.entries()) {
    await context.waitForDepth(queue, model.depth(index));
    for (;;) {
      const delivery = await getAndCheck(Math.max(0, finalStep - 1), index, false).catch((error: unknown) => {
        throw new Error(`while draining q${index} at the end: ${error instanceof Error ? error.message : String(error)}`);
      });
      if (!delivery) break;
      model.take(index, bodyText(delivery));
      await delivery.ack();
    }
    if (model.depth(index) !== 0) throw new Error(`q${index} drained but the model still holds [${model.contents(index).join(', ')}]`);
    await channel.deleteQueue(queue);
    context.forgetQueue(queue);
  }
  await channel.close();
}

/** The fast-check property: `modelRuns` random sequences of at most `modelMaxOperations` operations each. */
export async function checkAgainstModel(context: ConformanceContext): Promise<void> {
  const priorities = context.capabilities.priorities === null ? null : context.priorityLevels;
  let run = 0;
  await fc.assert(
    fc.asyncProperty(operationsArbitrary(priorities, context.setup.modelMaxOperations), (operations) =>
      runModelSequence(context, operations, run++),
    ),
    {
      numRuns: context.setup.modelRuns,
      ...(context.setup.modelSeed === undefined ? {} : { seed: context.setup.modelSeed }),
      includeErrorInReport: true,
      // Shrinking against a real broker can be slow: report the best counterexample found in time.
      interruptAfterTimeLimit: context.ms(60_000),
    },
  );
}

export const modelGroup: ConformanceGroup = {
  name: 'model',
  checks: [
    {
      name: 'random publish/get/settle/purge sequences agree with an in-memory model (fast-check)',
      run: checkAgainstModel,
      timeoutMs: 90_000,
    },
  ],
};
