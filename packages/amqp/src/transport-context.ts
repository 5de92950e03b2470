import type { ConnectionSupervisor } from './connection-supervisor';
import type { DelayLadder } from './delay-ladder';
import type { ResolvedAmqpOptions } from './options';
import type { Topology } from './topology';

/** What channels and consumers need from their transport (kept narrow so they do not import the transport). */
export interface TransportContext {
  readonly supervisor: ConnectionSupervisor;
  readonly options: ResolvedAmqpOptions;
  readonly topology: Topology;
  readonly ladder: DelayLadder;
  /** Whether a queue exists, asked with a passive declare on a channel of its own (a 404 closes that channel). */
  queueExists(queue: string): Promise<boolean>;
  /** Ready messages in a queue (passive declare), or undefined when it does not exist. */
  queueDepth(queue: string): Promise<number | undefined>;
  /** Declares a queue recorded in the topology again, with its bindings; false when it is not recorded. */
  redeclareQueue(queue: string): Promise<boolean>;
  /** Declares the delay ladder (once) and the route from it to `exchange` (and, for `''`, to the queue `routingKey`). */
  ensureDelayRoute(exchange: string, routingKey: string): Promise<void>;
  /** A channel closed: forget it. */
  channelClosed(channel: object): void;
}

/** What a consumer needs from the channel that made it. */
export interface ConsumerOwner {
  readonly isOpen: boolean;
  reportError(error: unknown): void;
  forgetConsumer(consumer: object): void;
}
