// @kq/amqp — the AMQP 0-9-1 (RabbitMQ) transport for kq, on amqplib.
import { claimPackageCopy, type TransportOptions } from '@kq/core';
import { AmqpTransport } from './amqp-transport';
import type { AmqpTransportOptions } from './options';

// One copy of @kq/amqp per process, or a loud error (see claimPackageCopy).
claimPackageCopy('@kq/amqp', import.meta.url);

export { AmqpDeadLetters } from './dead-letter-queue';
export { AmqpTransport, AMQP_MAX_PRIORITY } from './amqp-transport';
export type { AmqpTransportOptions, DelayQueueType } from './options';
export { ConsumerCancelled } from './amqp-errors';
export { parseAmqpUrl, type AmqpUrl } from './amqp-url';
export { BrokerAlternates, type FailoverStrategy } from './broker-alternates';
export {
  DEFAULT_DELAY_LADDER,
  DELAY_BITS,
  DELAY_TARGET_HEADER,
  DelayLadder,
  MAX_DELAY_MS,
  delayRoutingKey,
  deliveryBindingKey,
  parseDelayRoutingKey,
  planDelay,
  type DelayLevel,
  type DelayPlan,
} from './delay-ladder';

/** The factory core's transport registry calls for `amqp://` and `amqps://` URLs. */
export function createTransport(url: string, options: AmqpTransportOptions | TransportOptions = {}): AmqpTransport {
  return new AmqpTransport(url, options as AmqpTransportOptions);
}
export { AmqpBeatLease, type AmqpBeatLeaseOptions } from './single-active-consumer-lease';
export { AmqpCycleRegister, type AmqpCycleRegisterOptions } from './cycle-register';
export type { AmqpLeaseHost } from './lease-host';
