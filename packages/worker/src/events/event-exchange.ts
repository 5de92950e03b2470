import { Exchange, type TransportCapabilities } from '@kq/core';

/** Celery's `event_exchange` default. */
export const DEFAULT_EVENT_EXCHANGE = 'celeryev';

/**
 * The event exchange as Celery declares it (docs/wire.md#events): a durable **topic** exchange, except on transports
 * whose fanout is live PUB/SUB (Redis), where Celery makes it **fanout** — Kombu then publishes on
 * `/{db}.celeryev/<routing key>` channels and receivers subscribe by pattern, so routing keys still filter. Declaring
 * it any other way would be a 406 on RabbitMQ and would make Python processes miss kq's events on Redis.
 */
export function eventExchange(capabilities: TransportCapabilities, name: string = DEFAULT_EVENT_EXCHANGE): Exchange {
  const topic = capabilities.exchangeTypes.includes('topic');
  const type = capabilities.fanout === 'live' || !topic ? 'fanout' : 'topic';
  return new Exchange(name, { type, durable: true, autoDelete: false });
}
