import { fileURLToPath } from 'node:url';
import { afterAll, describe, it } from 'vitest';
import { brokerReachable, defineTransportSuite } from '@kq/test-harness';
import { amqplib, type AmqplibChannel, type AmqplibConnection } from '../src/amqplib-loader';
import { AmqpTransport } from '../src/index';
import { AMQP_URL, namer } from './helpers';

// Every transport of the run shares the broker (a second transport stands for a second process); the suite
// isolates tests by entity-name prefix and deletes what it declares. The delay ladder is this file's own.
const up = await brokerReachable('amqp');
const name = namer('conformance');
const ladderPrefix = name('ladder');

/** An independent view of the broker: a plain amqplib connection, `queue.declare(passive)` for the depth. */
class AmqplibProbe {
  #connection: Promise<AmqplibConnection> | undefined;
  #channel: Promise<AmqplibChannel> | undefined;

  async queueDepth(queue: string): Promise<number> {
    const channel = await this.#open();
    try {
      return (await channel.checkQueue(queue)).messageCount;
    } catch (error) {
      this.#channel = undefined; // a 404 closed it
      throw error;
    }
  }

  async close(): Promise<void> {
    const connection = await this.#connection?.catch(() => undefined);
    await connection?.close().catch(() => undefined);
  }

  #open(): Promise<AmqplibChannel> {
    this.#connection ??= amqplib.connect(AMQP_URL).then((connection) => {
      connection.on('error', () => undefined);
      return connection;
    });
    this.#channel ??= this.#connection.then(async (connection) => {
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      channel.on('close', () => (this.#channel = undefined));
      return channel;
    });
    return this.#channel;
  }
}

const probe = new AmqplibProbe();

afterAll(async () => {
  await probe.close();
  if (!up) return;
  const cleaner = new AmqpTransport(AMQP_URL, { delayLadderPrefix: ladderPrefix });
  await cleaner.deleteDelayLadder();
  await cleaner.close();
});

if (up) {
  defineTransportSuite({
    name: 'amqp',
    create: () => new AmqpTransport(AMQP_URL, { delayLadderPrefix: ladderPrefix, connectionName: name('suite'), resubscribeInterval: 200 }),
    probe: { queueDepth: (queue) => probe.queueDepth(queue) },
    peerModule: fileURLToPath(new URL('./conformance-peer.ts', import.meta.url)),
    peerEnv: { KQ_PEER_URL: AMQP_URL },
    skipChecks: {
      checkCancelMidStreamKeepsMessagesFresh:
        'RabbitMQ marks every message it pushed to a consumer redelivered when it comes back, read-ahead (prefetched) ones included (AMQP 0-9-1)',
    },
    crash: (transport) => {
      if (!(transport instanceof AmqpTransport)) throw new TypeError('expected an AmqpTransport');
      transport.terminate();
    },
    // The broker requeues a dead connection's deliveries as soon as it notices the socket closed.
    recoveryTimeoutMs: 5000,
    // Kombu's ladder delays in whole seconds.
    delayResolutionMs: 1000,
  });
} else {
  // A file with no test at all fails the run; this one says why it has none (brokerReachable printed the reason).
  describe.skip('transport conformance: amqp — skipped: the broker is not reachable', () => {
    it('runs when the broker is up', () => undefined);
  });
}
