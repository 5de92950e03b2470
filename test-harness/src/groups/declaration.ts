import { Binding, Exchange, PreconditionFailed, Queue, QueueNotFound } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { expectError } from '../expect-error';
import { expectQueueHolds } from '../queue-contents';
import { messageIds, testMessage } from '../test-messages';

/** A declared queue exists and is empty; an undeclared one is `QueueNotFound`. */
export async function checkQueueDeclaration(context: ConformanceContext): Promise<void> {
  const name = context.name('declared');
  context.trackQueue(name);
  const stats = await (await context.admin()).declareQueue(new Queue(name));
  expect(stats.queue).toBe(name);
  expect(stats.messageCount).toBe(0);
  expect((await (await context.admin()).checkQueue(name)).messageCount).toBe(0);
  const missing = context.name('never-declared');
  await expectError((await context.scratchChannel()).checkQueue(missing), QueueNotFound, 'checkQueue of a queue never declared');
}

/** Declaring the same queue again (from this and another connection) changes nothing and keeps its messages. */
export async function checkIdempotentQueueRedeclaration(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q', { maxLength: 1000 });
  const channel = await context.channel();
  await context.publishIds(channel, '', queue, messageIds('m', 3));
  await context.waitForDepth(queue, 3);
  const again = await channel.declareQueue(new Queue(queue, { maxLength: 1000 }));
  expect(again.messageCount, 'messageCount reported by the identical re-declaration').toBe(3);
  const other = await context.channel(await context.openTransport());
  await other.declareQueue(new Queue(queue, { maxLength: 1000 }));
  await expectQueueHolds(context, queue, messageIds('m', 3), { ordered: true });
}

/** Declaring the same exchange again (from this and another connection) keeps its bindings. */
export async function checkIdempotentExchangeRedeclaration(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('x', { type: 'direct' });
  const queue = await context.declareQueue('q', { exchange: new Exchange(exchange, { type: 'direct' }), routingKey: 'k' });
  const channel = await context.channel();
  await channel.declareExchange(new Exchange(exchange, { type: 'direct' }));
  await (await context.channel(await context.openTransport())).declareExchange(new Exchange(exchange, { type: 'direct' }));
  await channel.publish(exchange, 'k', testMessage('routed'));
  await expectQueueHolds(context, queue, ['routed']);
}

/** Re-declaring with other options is `PreconditionFailed`, and the existing entity is left as it was. */
export async function checkMismatchedRedeclaration(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('x', { type: 'direct' });
  const queue = await context.declareQueue('q', { exchange: new Exchange(exchange, { type: 'direct' }), routingKey: 'k' });
  await expectError(
    (await context.scratchChannel()).declareExchange(new Exchange(exchange, { type: 'fanout' })),
    PreconditionFailed,
    're-declaring a direct exchange as fanout',
  );
  await expectError(
    (await context.scratchChannel()).declareQueue(new Queue(queue, { maxLength: 5 })),
    PreconditionFailed,
    're-declaring a queue with a different x-max-length',
  );
  // Both still work as first declared.
  const channel = await context.channel();
  await channel.publish(exchange, 'k', testMessage('still-routed'));
  await expectQueueHolds(context, queue, ['still-routed']);
}

/** Declaring a queue with bindings declares their exchanges and binds it. */
export async function checkQueueWithBindings(context: ConformanceContext): Promise<void> {
  const first = context.name('first');
  const second = context.name('second');
  const queue = await context.declareQueue('q', {
    exchange: new Exchange(first, { type: 'direct' }),
    routingKey: 'one',
    bindings: [new Binding(new Exchange(second, { type: 'direct' }), 'two')],
  });
  const channel = await context.channel();
  await channel.publish(first, 'one', testMessage('via-first'));
  await channel.publish(second, 'two', testMessage('via-second'));
  await channel.publish(second, 'one', testMessage('wrong-key'));
  await expectQueueHolds(context, queue, ['via-first', 'via-second']);
}

/** After `unbindQueue` the exchange stops routing to the queue; `bindQueue` starts it again. */
export async function checkBindAndUnbind(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('x', { type: 'direct' });
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  await channel.bindQueue(queue, exchange, 'k');
  await channel.publish(exchange, 'k', testMessage('while-bound'));
  await channel.unbindQueue(queue, exchange, 'k');
  await channel.publish(exchange, 'k', testMessage('after-unbind'));
  await expectQueueHolds(context, queue, ['while-bound']);
  await channel.bindQueue(queue, exchange, 'k');
  await channel.publish(exchange, 'k', testMessage('bound-again'));
  await expectQueueHolds(context, queue, ['bound-again']);
}

/** `deleteQueue` resolves to the number of messages it held, and the queue is gone. */
export async function checkDeleteQueue(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  await context.publishIds(channel, '', queue, messageIds('m', 2));
  await context.waitForDepth(queue, 2);
  expect(await channel.deleteQueue(queue), 'messages deleteQueue reports').toBe(2);
  await expectError((await context.scratchChannel()).checkQueue(queue), QueueNotFound, 'checkQueue after deleteQueue');
}

export const declarationGroup: ConformanceGroup = {
  name: 'declaration',
  checks: [
    { name: 'declares a queue, which starts empty; an undeclared queue is QueueNotFound', run: checkQueueDeclaration },
    { name: 're-declaring a queue identically is idempotent and keeps its messages', run: checkIdempotentQueueRedeclaration },
    { name: 're-declaring an exchange identically is idempotent and keeps its bindings', run: checkIdempotentExchangeRedeclaration },
    {
      name: 're-declaring with different options is PreconditionFailed and leaves the entity intact',
      run: checkMismatchedRedeclaration,
      skipReason: (setup) =>
        setup.detectsMismatchedRedeclaration ? undefined : 'the suite was told the transport cannot detect mismatched re-declarations',
    },
    { name: 'declaring a queue with bindings declares the exchanges and binds it', run: checkQueueWithBindings },
    { name: 'unbindQueue stops routing and bindQueue restores it', run: checkBindAndUnbind },
    { name: 'deleteQueue reports the messages it held and removes the queue', run: checkDeleteQueue },
  ],
};
