import { Exchange, ExchangeNotFound, UnroutableError, UnsupportedFeature } from '@kq/core';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { expectError } from '../expect-error';
import { expectQueueHolds } from '../queue-contents';
import { testMessage } from '../test-messages';

/** A mandatory publish that matches no queue is `UnroutableError`; a non-mandatory one is dropped quietly. */
export async function checkMandatoryUnroutable(context: ConformanceContext): Promise<void> {
  const exchange = await context.declareExchange('x', { type: 'direct' });
  const queue = await context.declareQueue('q', { exchange: new Exchange(exchange, { type: 'direct' }), routingKey: 'bound' });
  await expectError(
    (await context.scratchChannel()).publish(exchange, 'unbound', testMessage('nowhere'), { mandatory: true }),
    UnroutableError,
    'mandatory publish with a key no queue is bound with',
  );
  await expectError(
    (await context.scratchChannel()).publish('', context.name('no-such-queue'), testMessage('nowhere'), { mandatory: true }),
    UnroutableError,
    'mandatory publish to the default exchange naming no queue',
  );
  const channel = await context.channel();
  await channel.publish(exchange, 'unbound', testMessage('dropped'));
  await channel.publish(exchange, 'bound', testMessage('routed'), { mandatory: true });
  await expectQueueHolds(context, queue, ['routed']);
}

/** Publishing to an exchange never declared is `ExchangeNotFound`; other messages are untouched. */
export async function checkUndeclaredExchange(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  const channel = await context.channel();
  await channel.publish('', queue, testMessage('before'));
  await expectError(
    (await context.scratchChannel()).publish(context.name('never-declared'), 'k', testMessage('lost?')),
    ExchangeNotFound,
    'publishing to an exchange that was never declared',
  );
  await expectError(
    (await context.scratchChannel()).bindQueue(queue, context.name('never-declared'), 'k'),
    ExchangeNotFound,
    'binding to an exchange that was never declared',
  );
  await channel.publish('', queue, testMessage('after'));
  await expectQueueHolds(context, queue, ['before', 'after'], { ordered: true });
}

/** Without delayed delivery, `publish(..., { delay })` fails loudly instead of delivering early. */
export async function checkDelayUnsupported(context: ConformanceContext): Promise<void> {
  const queue = await context.declareQueue('q');
  await expectError(
    (await context.scratchChannel()).publish('', queue, testMessage('later'), { delay: 1000 }),
    UnsupportedFeature,
    'publishing with a delay on a transport without delayed delivery',
  );
  await expectQueueHolds(context, queue, []);
}

export const publishErrorsGroup: ConformanceGroup = {
  name: 'publish errors',
  checks: [
    { name: 'mandatory publish to nowhere is UnroutableError', run: checkMandatoryUnroutable },
    { name: 'publishing to an undeclared exchange is ExchangeNotFound and loses nothing', run: checkUndeclaredExchange },
    {
      name: 'publishing with a delay is UnsupportedFeature',
      run: checkDelayUnsupported,
      skipReason: (setup) => (setup.capabilities.delayedDelivery ? 'transport reports delayedDelivery: true' : undefined),
    },
  ],
};
