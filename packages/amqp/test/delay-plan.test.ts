import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DELAY_BITS, DELAY_TARGET_HEADER, DelayLadder, MAX_DELAY_MS, delayRoutingKey, deliveryBindingKey, parseDelayRoutingKey, planDelay } from '../src/index';

const ladder = new DelayLadder();
const MAX_SECONDS = 2 ** DELAY_BITS - 1;
/** Routing keys as Celery uses them: dot-separated words, none of them a lone 0 or 1 run that could pass for digits. */
const routingKey = fc.stringMatching(/^[a-z][a-z0-9_-]{0,11}(\.[a-z][a-z0-9_-]{0,11}){0,3}$/);

/** AMQP topic matching: `*` is one word, `#` zero or more. */
function topicMatches(pattern: string, key: string): boolean {
  const match = (p: string[], k: string[]): boolean => {
    if (p.length === 0) return k.length === 0;
    const [head, ...rest] = p;
    if (head === '#') return match(rest, k) || (k.length > 0 && match(p, k.slice(1)));
    if (k.length === 0) return false;
    return (head === '*' || head === k[0]) && match(rest, k.slice(1));
  };
  return match(pattern.split('.'), key.split('.'));
}

/**
 * Walks a message through the declared ladder as RabbitMQ would: from an exchange, into every queue bound with a
 * matching key (waiting its TTL, then dead-lettered to its DLX with the same key) or on along matching
 * exchange-to-exchange bindings, until it reaches the delivery exchange. Returns the time spent in queues.
 */
function walk(entities: ReturnType<DelayLadder['entities']>, start: string, key: string): { waitedMs: number; levels: string[] } {
  let exchange = start;
  let waitedMs = 0;
  const levels: string[] = [];
  for (let hops = 0; hops < 200 && exchange !== ladder.deliveryExchange; hops++) {
    const queues = entities.queueBindings.filter((binding) => binding.exchange === exchange && topicMatches(binding.routingKey, key));
    const onward = entities.exchangeBindings.filter((binding) => binding.source === exchange && topicMatches(binding.routingKey, key));
    expect(queues.length + onward.length).toBe(1); // every message goes exactly one way
    if (queues[0]) {
      const queue = entities.queues.find((candidate) => candidate.name === queues[0]!.queue)!;
      const args = queue.toArguments();
      waitedMs += args['x-message-ttl'] as number;
      levels.push(queue.name);
      exchange = args['x-dead-letter-exchange'] as string;
    } else {
      exchange = onward[0]!.destination;
    }
  }
  expect(exchange).toBe(ladder.deliveryExchange);
  return { waitedMs, levels };
}

describe("the delay routing key (Kombu's calculate_routing_key)", () => {
  it('is 28 binary digits of the delay in seconds, dot-separated, then the routing key', () => {
    expect(delayRoutingKey(5, 'celery')).toBe(`${'0.'.repeat(25)}1.0.1.celery`);
    expect(delayRoutingKey(MAX_SECONDS, 'a.b')).toBe(`${'1.'.repeat(28)}a.b`);
    expect(() => delayRoutingKey(0, 'x')).toThrow(/whole number of seconds/);
    expect(() => delayRoutingKey(1.5, 'x')).toThrow(/whole number of seconds/);
    expect(() => delayRoutingKey(MAX_SECONDS + 1, 'x')).toThrow(/whole number of seconds/);
    expect(() => delayRoutingKey(1, '')).toThrow(/non-empty routing key/);
  });

  it('decodes back to the delay and the routing key, and never prefixes a key twice', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_SECONDS }), fc.integer({ min: 1, max: MAX_SECONDS }), routingKey, (seconds, earlier, key) => {
        const encoded = delayRoutingKey(seconds, key);
        expect(encoded.split('.').slice(0, DELAY_BITS).every((digit) => digit === '0' || digit === '1')).toBe(true);
        expect(parseDelayRoutingKey(encoded)).toEqual({ seconds, routingKey: key });
        expect(delayRoutingKey(seconds, delayRoutingKey(earlier, key))).toBe(encoded);
      }),
    );
    expect(parseDelayRoutingKey('celery')).toBeNull();
  });

  it("binds targets with Kombu's key: #.<key>, or the key itself when it starts with #", () => {
    expect(deliveryBindingKey('celery')).toBe('#.celery');
    expect(deliveryBindingKey('#.x')).toBe('#.x');
  });
});

describe('the delay ladder', () => {
  it('walks every delay through exactly the levels of its binary digits, waiting the delay in all, to the delivery exchange', () => {
    for (const type of ['quorum', 'classic'] as const) {
      const entities = ladder.entities(type);
      fc.assert(
        fc.property(fc.integer({ min: 1, max: MAX_SECONDS }), routingKey, (seconds, key) => {
          const { waitedMs, levels } = walk(entities, 'celery_delayed_27', delayRoutingKey(seconds, key));
          expect(waitedMs).toBe(seconds * 1000);
          const expected = ladder.levels.filter((level) => Math.floor(seconds / 2 ** level.level) % 2 === 1).map((level) => level.name);
          expect(levels).toEqual(expected);
        }),
        { numRuns: 200 },
      );
    }
    // The delivery exchange then hands it to targets bound with #.<key>.
    expect(topicMatches(deliveryBindingKey('orders.eu'), delayRoutingKey(77, 'orders.eu'))).toBe(true);
    expect(topicMatches(deliveryBindingKey('orders.eu'), delayRoutingKey(77, 'orders.us'))).toBe(false);
  });

  it('plans whole seconds, rounded up so a message is never early, published to celery_delayed_27', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.001, max: MAX_DELAY_MS, noNaN: true }), (delay) => {
        const plan = planDelay(delay, 'x', 'key')!;
        expect(plan.exchange).toBe('celery_delayed_27');
        expect(plan.delayMs).toBeGreaterThanOrEqual(delay);
        expect(plan.delayMs - delay).toBeLessThan(1000);
        expect(parseDelayRoutingKey(plan.routingKey)).toEqual({ seconds: plan.delayMs / 1000, routingKey: 'key' });
        expect(plan.headers).toEqual({ [DELAY_TARGET_HEADER]: 'x' });
      }),
    );
    expect(planDelay(1500.2, '', 'q')?.delayMs).toBe(2000);
    expect(planDelay(0, 'x', 'k')).toBeNull();
    expect(planDelay(-5, 'x', 'k')).toBeNull();
    expect(() => planDelay(MAX_DELAY_MS + 1, 'x', 'k')).toThrow(/8\.5 years/);
    expect(() => planDelay(Number.NaN, 'x', 'k')).toThrow(/finite/);
  });

  it("declares Kombu 5.5's entities: 28 topic exchanges and TTL queues and the celery_delayed_delivery topic exchange", () => {
    const { queues, exchanges, queueBindings, exchangeBindings } = ladder.entities('quorum');
    expect(queues.map((queue) => queue.name)).toEqual(Array.from({ length: 28 }, (_, index) => `celery_delayed_${27 - index}`));
    expect(exchanges.map((exchange) => [exchange.name, exchange.type, exchange.durable])).toEqual([
      ...queues.map((queue) => [queue.name, 'topic', true]),
      ['celery_delayed_delivery', 'topic', true],
    ]);
    expect(queues.every((queue) => queue.durable && !queue.autoDelete && !queue.exclusive)).toBe(true);
    expect(queues[0]?.toArguments()).toEqual({
      'x-queue-type': 'quorum',
      'x-overflow': 'reject-publish',
      'x-message-ttl': 2 ** 27 * 1000,
      'x-dead-letter-exchange': 'celery_delayed_26',
      'x-dead-letter-strategy': 'at-least-once',
    });
    expect(queues.at(-1)?.toArguments()['x-dead-letter-exchange']).toBe('celery_delayed_delivery');
    expect(ladder.entities('classic').queues[3]?.toArguments()).toEqual({
      'x-queue-type': 'classic',
      'x-overflow': 'reject-publish',
      'x-message-ttl': 2 ** 24 * 1000,
      'x-dead-letter-exchange': 'celery_delayed_23',
    });
    expect(queueBindings[0]).toEqual({ queue: 'celery_delayed_27', exchange: 'celery_delayed_27', routingKey: '1.#', arguments: {} });
    expect(queueBindings[2]?.routingKey).toBe('*.*.1.#');
    expect(exchangeBindings[0]).toEqual({ destination: 'celery_delayed_26', source: 'celery_delayed_27', routingKey: '0.#', arguments: {} });
    expect(exchangeBindings.at(-1)).toEqual({ destination: 'celery_delayed_delivery', source: 'celery_delayed_0', routingKey: `${'*.'.repeat(27)}0.#`, arguments: {} });
    expect(new DelayLadder('app1').entities('classic').exchanges.map((exchange) => exchange.name)).toContain('app1_celery_delayed_delivery');
  });

  it('strips the delay digits, its target header and its hop records from a delivered message', () => {
    const stripped = ladder.strip(
      {
        app: 1,
        [DELAY_TARGET_HEADER]: 'orders',
        'x-death': [
          { queue: 'celery_delayed_2', count: 1, reason: 'expired' },
          { queue: 'work', count: 2, reason: 'rejected' },
        ],
        'x-first-death-queue': 'celery_delayed_2',
        'x-first-death-exchange': 'celery_delayed_2',
        'x-first-death-reason': 'expired',
      },
      delayRoutingKey(5, 'job.5'),
    );
    expect(stripped).toEqual({ headers: { app: 1, 'x-death': [{ queue: 'work', count: 2, reason: 'rejected' }] }, exchange: 'orders', routingKey: 'job.5' });
    // A message Celery put in the ladder: no target header, the routing key still gives its real key.
    expect(ladder.strip({}, delayRoutingKey(3, 'celery'))).toEqual({ headers: {}, exchange: undefined, routingKey: 'celery' });
    expect(ladder.strip({ a: 1 }, 'celery')).toEqual({ headers: { a: 1 }, exchange: undefined, routingKey: 'celery' });
  });
});
