import { backoffCountdown } from '@kq/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { parseRateLimit, TokenBucket } from '../src/runtime/rate-limit';

describe('rate limits', () => {
  it("parses Celery's forms", () => {
    expect(parseRateLimit('10/s')).toBe(10);
    expect(parseRateLimit('120/m')).toBe(2);
    expect(parseRateLimit('3600/h')).toBe(1);
    expect(parseRateLimit(5)).toBe(5);
    expect(parseRateLimit('7')).toBe(7);
    expect(parseRateLimit('')).toBeNull();
    expect(parseRateLimit(null)).toBeNull();
    expect(parseRateLimit('0/s')).toBeNull();
    expect(() => parseRateLimit('ten per second')).toThrow(/N\/s/);
  });

  it('never hands out more tokens than rate × time + capacity', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.1, max: 100, noNaN: true }), fc.array(fc.double({ min: 0, max: 2, noNaN: true }), { maxLength: 200 }), (rate, gaps) => {
        let now = 0;
        const bucket = new TokenBucket(rate, () => now);
        let taken = 0;
        for (const gap of gaps) {
          now += gap;
          if (bucket.take() === 0) taken++;
        }
        expect(taken).toBeLessThanOrEqual(Math.floor(rate * now + bucket.capacity + 1e-9));
      }),
    );
  });

  it('says how long until the next token', () => {
    let now = 0;
    const bucket = new TokenBucket(2, () => now);
    expect(bucket.take()).toBe(0);
    expect(bucket.take()).toBe(0);
    expect(bucket.take()).toBeCloseTo(0.5);
    now = 0.5;
    expect(bucket.take()).toBe(0);
  });
});

describe('retry backoff', () => {
  it('doubles up to the maximum', () => {
    expect([0, 1, 2, 3, 10].map((retries) => backoffCountdown(retries, { factor: 1, maximum: 600, jitter: false }))).toEqual([1, 2, 4, 8, 600]);
  });

  it('jitters within [0, countdown]', () => {
    fc.assert(
      fc.property(fc.nat(20), fc.double({ min: 0.01, max: 10, noNaN: true }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (retries, factor, random) => {
        const plain = backoffCountdown(retries, { factor, maximum: 600, jitter: false });
        const jittered = backoffCountdown(retries, { factor, maximum: 600, jitter: true }, () => random);
        expect(jittered).toBeGreaterThanOrEqual(0);
        expect(jittered).toBeLessThanOrEqual(plain);
      }),
    );
  });
});

describe('routing', () => {
  it('publishes direct queues through the default exchange, like Celery', () => {
    const app = new App('r');
    expect(app.router.route('proj.add', [], {})).toMatchObject({ exchange: { name: '' }, routingKey: 'celery', queue: { name: 'celery' } });
    const queue = app.router.queue('celery');
    expect(queue.exchange?.name).toBe('celery');
    expect(queue.routingKey).toBe('celery');
  });

  it('follows task routes by glob and by function', () => {
    const globbed = new App('r', { taskRoutes: { 'images.*': 'media', 'mail.send': { queue: 'mail', priority: 7 } } });
    expect(globbed.router.route('images.resize', [], {}).routingKey).toBe('media');
    expect(globbed.router.route('mail.send', [], {})).toMatchObject({ routingKey: 'mail', priority: 7 });
    expect(globbed.router.route('other', [], {}).routingKey).toBe('celery');
    const fn = new App('r', { taskRoutes: (name) => (name.startsWith('hi') ? 'high' : undefined) });
    expect(fn.router.route('hi.there', [], {}).routingKey).toBe('high');
    expect(fn.router.route('lo', [], {}, { queue: 'explicit' }).routingKey).toBe('explicit');
  });
});

describe('configuration', () => {
  it('refuses an unknown serializer in acceptContent and an unknown time zone at start-up', () => {
    expect(() => new App('bad', { acceptContent: ['jsn'] })).toThrow(/jsn/);
    expect(() => new App('bad', { timezone: 'Mars/Olympus_Mons' })).toThrow();
    expect(() => new App('good', { acceptContent: ['json', 'application/x-msgpack'], timezone: 'Europe/Berlin' })).not.toThrow();
  });
});
