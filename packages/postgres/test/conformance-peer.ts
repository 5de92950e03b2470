// The conformance suite's second OS process on PostgreSQL: the same tables and lease as the suite's transports.
import { PostgresTransport } from '../src/index';

export function createTransport(): PostgresTransport {
  const env = process.env;
  return new PostgresTransport(env['KQ_PEER_URL'] as string, {
    queueTable: env['KQ_PEER_QUEUE_TABLE'] as string,
    messageTable: env['KQ_PEER_MESSAGE_TABLE'] as string,
    leaseMs: Number(env['KQ_PEER_LEASE_MS']),
    pollIntervalMs: 250,
    sweepIntervalMs: 200,
    logger: { warn: () => undefined },
  });
}
