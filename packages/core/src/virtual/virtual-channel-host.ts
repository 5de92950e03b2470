import type { Exchange } from '../exchange';
import type { Queue } from '../queue';
import type { TransportCapabilities } from '../transport';
import type { FanoutBus, VirtualStore } from './virtual-store';

/** A queue bound to a fanout exchange whose messages go to live subscribers instead of the store. */
export interface FanoutBinding {
  exchange: string;
  routingKey: string;
}

/**
 * What a `VirtualChannel` and its consumers use of the `VirtualTransport` that made them (which implements it): the
 * store, the per-process exchange and queue tables, fanout subscriptions and consumer counts. Declared apart so
 * the channel does not import the transport that imports it.
 */
export interface VirtualChannelHost {
  readonly name: string;
  readonly store: VirtualStore;
  readonly capabilities: TransportCapabilities;
  readonly pollIntervalMs: number;
  readonly batchSize: number;
  readonly isConnected: boolean;
  priorityStep(priority: unknown): number;
  findExchange(name: string): Promise<Exchange | undefined>;
  rememberExchange(exchange: Exchange): Promise<void>;
  forgetExchange(name: string): Promise<void>;
  declaredQueue(name: string): Queue | undefined;
  rememberQueue(queue: Queue): void;
  forgetQueue(name: string): void;
  queueDeclaration(name: string): Promise<Queue | undefined>;
  noteFanoutBinding(queue: string, exchange: string, routingKey: string): void;
  dropFanoutBinding(queue: string, exchange: string, routingKey: string): void;
  isLiveFanoutQueue(queue: string): boolean;
  liveFanoutBindings(queue: string): readonly FanoutBinding[];
  fanoutBus(): FanoutBus;
  countConsumers(queues: readonly string[], delta: number): void;
  consumerCount(queue: string): number;
  reportUnroutable(exchange: string, routingKey: string): void;
  /** The channel (one this host made) closed: forget it. */
  channelClosed(channel: object): void;
}
