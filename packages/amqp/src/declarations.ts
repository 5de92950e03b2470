import type { Exchange, Queue, QueueStats } from '@kq/core';
import type { AmqplibChannel } from './amqplib-loader';
import { toFieldTable } from './field-table';
import type { ExchangeBindingRecord, QueueBindingRecord, TopologyEntry } from './topology';

/**
 * AMQP declarations of kq entities, with exactly the flags and arguments they carry: the broker compares them with
 * an existing entity's and answers a difference with 406 PRECONDITION_FAILED. Arguments are tagged as py-amqp
 * tags them (`x-max-priority` as a signed 32-bit int, …), which RabbitMQ treats as equal to Kombu's declarations.
 */
export async function declareExchangeOn(channel: AmqplibChannel, exchange: Exchange): Promise<void> {
  await channel.assertExchange(exchange.name, exchange.type, {
    durable: exchange.durable,
    autoDelete: exchange.autoDelete,
    internal: exchange.internal,
    arguments: toFieldTable(exchange.arguments),
  });
}

/** Kombu's order of the queue arguments it derives (`to_rabbitmq_queue_arguments`); the rest follow as given. */
const KOMBU_ARGUMENT_ORDER = ['x-expires', 'x-message-ttl', 'x-max-length', 'x-max-length-bytes', 'x-max-priority'];

/** The queue's arguments in the order Kombu sends them, so `rabbitmqctl list_queues` shows the same table. */
export function queueArguments(queue: Queue): Record<string, unknown> {
  const args = queue.toArguments();
  const ordered: Record<string, unknown> = {};
  for (const key of KOMBU_ARGUMENT_ORDER) if (key in args) ordered[key] = args[key];
  for (const [key, value] of Object.entries(args)) if (!(key in ordered)) ordered[key] = value;
  return ordered;
}

export async function declareQueueOn(channel: AmqplibChannel, queue: Queue): Promise<QueueStats> {
  const reply = await channel.assertQueue(queue.name, {
    durable: queue.durable,
    exclusive: queue.exclusive,
    autoDelete: queue.autoDelete,
    arguments: toFieldTable(queueArguments(queue)),
  });
  return { queue: reply.queue, messageCount: reply.messageCount, consumerCount: reply.consumerCount };
}

export async function bindQueueOn(channel: AmqplibChannel, binding: QueueBindingRecord): Promise<void> {
  await channel.bindQueue(binding.queue, binding.exchange, binding.routingKey, toFieldTable(binding.arguments));
}

export async function bindExchangeOn(channel: AmqplibChannel, binding: ExchangeBindingRecord): Promise<void> {
  await channel.bindExchange(binding.destination, binding.source, binding.routingKey, toFieldTable(binding.arguments));
}

export async function declareEntry(channel: AmqplibChannel, entry: TopologyEntry): Promise<void> {
  switch (entry.kind) {
    case 'exchange':
      return declareExchangeOn(channel, entry.exchange);
    case 'queue':
      await declareQueueOn(channel, entry.queue);
      return;
    case 'queueBinding':
      return bindQueueOn(channel, entry.binding);
    case 'exchangeBinding':
      return bindExchangeOn(channel, entry.binding);
  }
}

export function describeEntry(entry: TopologyEntry): string {
  switch (entry.kind) {
    case 'exchange':
      return `declare exchange ${JSON.stringify(entry.exchange.name)}`;
    case 'queue':
      return `declare queue ${JSON.stringify(entry.queue.name)}`;
    case 'queueBinding':
      return `bind queue ${JSON.stringify(entry.binding.queue)} to exchange ${JSON.stringify(entry.binding.exchange)}`;
    case 'exchangeBinding':
      return `bind exchange ${JSON.stringify(entry.binding.destination)} to exchange ${JSON.stringify(entry.binding.source)}`;
  }
}
