import { KqError, type Channel, type DeadLetter, type DeadLetterBox, type DeadLetterQuery, type Delivery } from '@kq/core';

/** RabbitMQ's record of where a dead-lettered message was (the first entry is the latest death). */
interface DeathRecord {
  queue?: unknown;
  reason?: unknown;
  exchange?: unknown;
  'routing-keys'?: unknown;
  time?: unknown;
}

/**
 * Dead letters on RabbitMQ live in the queue a task queue dead-letters to (its `x-dead-letter-exchange` routes
 * there); `kq dlq` names it with `-Q`. Listing reads the messages and puts them back; requeueing republishes each to
 * the exchange and routing key it died from (RabbitMQ's `x-death`) and acks it; purging empties the queue.
 */
export class AmqpDeadLetters implements DeadLetterBox {
  readonly #channel: () => Promise<Channel>;

  constructor(channel: () => Promise<Channel>) {
    this.#channel = channel;
  }

  async list(query: DeadLetterQuery = {}): Promise<DeadLetter[]> {
    const queue = requireQueue(query.queue, 'list');
    const channel = await this.#channel();
    const held: Delivery[] = [];
    try {
      while (held.length < (query.limit ?? 100)) {
        const delivery = await channel.get(queue);
        if (!delivery) break;
        held.push(delivery);
      }
      return held.map((delivery) => toDeadLetter(delivery, queue));
    } finally {
      // Back to the dead-letter queue, untouched: listing is a look, not a take.
      await channel.close();
    }
  }

  async requeue(query: { queue?: string; ids?: readonly string[] } = {}): Promise<number> {
    const queue = requireQueue(query.queue, 'requeue');
    const ids = query.ids ? new Set(query.ids) : undefined;
    const channel = await this.#channel();
    let sent = 0;
    try {
      for (;;) {
        const delivery = await channel.get(queue);
        if (!delivery) break;
        if (ids && !ids.has(idOf(delivery))) continue; // left unsettled: back in the queue when the channel closes
        const death = lastDeath(delivery);
        const exchange = typeof death?.exchange === 'string' ? death.exchange : '';
        const keys = Array.isArray(death?.['routing-keys']) ? (death['routing-keys'] as unknown[]) : [];
        const routingKey = typeof keys[0] === 'string' ? keys[0] : typeof death?.queue === 'string' ? death.queue : delivery.deliveryInfo.routingKey;
        const { 'x-death': _death, 'x-first-death-exchange': _e, 'x-first-death-queue': _q, 'x-first-death-reason': _r, ...headers } = delivery.headers;
        await channel.publish(exchange, routingKey, {
          body: delivery.body,
          contentType: delivery.contentType,
          contentEncoding: delivery.contentEncoding,
          headers,
          properties: delivery.properties,
        });
        await delivery.ack();
        sent++;
      }
    } finally {
      await channel.close();
    }
    return sent;
  }

  async purge(query: { queue?: string } = {}): Promise<number> {
    const queue = requireQueue(query.queue, 'purge');
    const channel = await this.#channel();
    try {
      return await channel.purgeQueue(queue);
    } finally {
      await channel.close();
    }
  }
}

function requireQueue(queue: string | undefined, action: string): string {
  if (queue) return queue;
  throw new KqError(
    `On RabbitMQ, rejected messages are in the dead-letter queue your task queue dead-letters to; name it to ${action} ` +
      `its messages (kq dlq ${action} -Q <dead-letter queue>).`,
  );
}

function lastDeath(delivery: Delivery): DeathRecord | undefined {
  const deaths = delivery.headers['x-death'];
  return Array.isArray(deaths) && typeof deaths[0] === 'object' && deaths[0] !== null ? (deaths[0] as DeathRecord) : undefined;
}

/** A Celery task message's id, else the message id, else the delivery tag. */
function idOf(delivery: Delivery): string {
  const id = delivery.headers['id'];
  return typeof id === 'string' ? id : (delivery.properties.messageId ?? delivery.deliveryInfo.deliveryTag);
}

function toDeadLetter(delivery: Delivery, queue: string): DeadLetter {
  const death = lastDeath(delivery);
  const time = death?.time;
  return {
    id: idOf(delivery),
    queue: typeof death?.queue === 'string' ? death.queue : queue,
    reason: typeof death?.reason === 'string' ? death.reason : 'rejected',
    at: time instanceof Date ? time.getTime() : typeof time === 'number' ? time * 1000 : null,
    headers: delivery.headers,
    contentType: delivery.contentType,
    body: delivery.body,
  };
}
