import type { ConnectionSupervisor } from './connection-supervisor';

/**
 * What the cycle register and the beat lease use of the AmqpTransport that makes them: its connection, how many
 * brokers it knows (one: a classic queue, more: a quorum one) and word of a lost connection. Declared here, not as
 * the transport, so they do not import the file that imports them.
 */
export interface AmqpLeaseHost {
  readonly supervisor: Pick<ConnectionSupervisor, 'connection'>;
  readonly brokerCount: number;
  on(event: 'disconnected', listener: () => void): unknown;
  off(event: 'disconnected', listener: () => void): unknown;
}
