import { Exchange, type Binding, type Queue } from '@kq/core';

/** Kombu's `Exchange.as_dict()`. */
export function exchangeAsDict(exchange: Exchange): Record<string, unknown> {
  return {
    name: exchange.name,
    type: exchange.type,
    arguments: Object.keys(exchange.arguments).length > 0 ? { ...exchange.arguments } : null,
    durable: exchange.durable,
    passive: false,
    auto_delete: exchange.autoDelete,
    delivery_mode: exchange.deliveryMode ?? null,
    no_declare: false,
  };
}

/**
 * Kombu's `Queue.as_dict(recurse=True)`, what `inspect active_queues` returns for each queue a worker consumes
 * (docs/wire.md#remote-control-pidbox). The first binding is the queue's own `exchange`/`routing_key`; further ones are
 * `bindings`. Kombu keeps `expires`/`message_ttl` in seconds.
 */
export function queueAsDict(queue: Queue): Record<string, unknown> {
  const [own, ...extra] = queue.bindings;
  const args = queue.extraArguments;
  return {
    name: queue.name,
    exchange: exchangeAsDict(own?.exchange ?? Exchange.DEFAULT),
    routing_key: own?.routingKey ?? '',
    queue_arguments: Object.keys(args).length > 0 ? { ...args } : null,
    binding_arguments: own && Object.keys(own.arguments).length > 0 ? { ...own.arguments } : null,
    consumer_arguments: null,
    durable: queue.durable,
    exclusive: queue.exclusive,
    auto_delete: queue.autoDelete,
    no_ack: false,
    alias: null,
    bindings: extra.map(bindingAsDict),
    no_declare: null,
    expires: queue.expires === undefined ? null : queue.expires / 1000,
    message_ttl: queue.messageTtl === undefined ? null : queue.messageTtl / 1000,
    max_length: queue.maxLength ?? null,
    max_length_bytes: queue.maxLengthBytes ?? null,
    max_priority: queue.maxPriority ?? null,
  };
}

function bindingAsDict(binding: Binding): Record<string, unknown> {
  return {
    exchange: exchangeAsDict(binding.exchange),
    routing_key: binding.routingKey,
    arguments: Object.keys(binding.arguments).length > 0 ? { ...binding.arguments } : null,
    unbind_arguments: null,
  };
}
