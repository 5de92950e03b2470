// The cluster conformance suite's second OS process: the same cluster, prefix and lease as the suite's transports.
import { RedisTransport } from '../../src/index';

export function createTransport(): RedisTransport {
  const env = process.env;
  return new RedisTransport(env['KQ_PEER_URL'] as string, {
    globalKeyprefix: env['KQ_PEER_PREFIX'] as string,
    leaseMs: Number(env['KQ_PEER_LEASE_MS']),
    pollIntervalMs: 250,
    sweepIntervalMs: 200,
    logger: { warn: () => undefined },
  });
}
