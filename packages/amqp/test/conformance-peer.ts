// The conformance suite's second OS process on RabbitMQ: when it dies, the broker requeues what it held.
import { AmqpTransport } from '../src/index';

export function createTransport(): AmqpTransport {
  return new AmqpTransport(process.env['KQ_PEER_URL'] as string, { connectionName: 'kq-conformance-peer' });
}
