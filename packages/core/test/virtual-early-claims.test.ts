import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MemoryBroker,
  MemoryStore,
  Queue,
  VirtualTransport,
  type Claim,
  type ClaimOptions,
  type Delivery,
  type TransportDescription,
} from '../src/index';

/**
 * A memory store that hands the first `early` claims of every claim call over through `onEarlyClaims` (as the Redis
 * store does with a message BRPOP woke up with) and resolves with the rest only.
 */
class EarlyHandingStore extends MemoryStore {
  readonly #splits: number[];
  #calls = 0;

  constructor(broker: MemoryBroker, splits: number[]) {
    super(broker);
    this.#splits = splits;
  }

  override async claim(queues: readonly string[], options: ClaimOptions): Promise<Claim[]> {
    const claims = await super.claim(queues, options);
    const early = Math.min(claims.length, this.#splits[this.#calls++ % this.#splits.length] ?? 0);
    if (!options.onEarlyClaims || early === 0) return claims;
    options.onEarlyClaims(claims.slice(0, early));
    return claims.slice(early);
  }
}

class EarlyHandingTransport extends VirtualTransport {
  readonly name = 'early-handing';

  constructor(splits: number[]) {
    super(new EarlyHandingStore(new MemoryBroker(`early-${Math.random()}`), splits), { pollIntervalMs: 20, batchSize: 4 });
  }

  describe(): TransportDescription {
    return { transport: 'memory', hostname: 'early', port: null, virtualHost: null, userid: null, ssl: false };
  }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('claims a store hands over early', () => {
  it('are delivered once each, in order, and count toward prefetch (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 6 }),
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 5 }),
        async (prefetch, publishBursts, splits, ackDelays) => {
          const transport = new EarlyHandingTransport(splits);
          const channel = await transport.createChannel();
          await channel.declareQueue(new Queue('q'));
          const received: string[] = [];
          let unsettled = 0;
          let mostUnsettled = 0;
          let settledCount = 0;
          const consumer = await channel.consume({
            queues: ['q'],
            prefetch,
            onMessage: (delivery: Delivery) => {
              received.push(delivery.body.toString());
              unsettled++;
              mostUnsettled = Math.max(mostUnsettled, unsettled);
              const delay = ackDelays[received.length % ackDelays.length] ?? 0;
              void (async () => {
                for (let turn = 0; turn < delay; turn++) await tick();
                unsettled--;
                await delivery.ack();
                settledCount++;
              })();
            },
          });
          const sent: string[] = [];
          for (const burst of publishBursts) {
            for (let at = 0; at < burst; at++) {
              const body = String(sent.length);
              sent.push(body);
              await channel.publish('', 'q', { body: Buffer.from(body), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} });
            }
            await tick();
          }
          for (let turn = 0; turn < 2000 && settledCount < sent.length; turn++) await new Promise((resolve) => setTimeout(resolve, 1));
          await consumer.cancel();
          await channel.close();
          await transport.close();
          expect(received).toEqual(sent);
          expect(mostUnsettled).toBeLessThanOrEqual(prefetch);
        },
      ),
      { numRuns: 40 },
    );
  });
});
