/**
 * Beat and periodic tasks find their broker-side pieces in the transport package of the broker URL
 * (`createBeatLease` / `createCycleRegister` exported by @kq/redis and @kq/amqp).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import type { RedisTransport } from '@kq/redis';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { App } from '../src/app';
import { Beat } from '../src/beat/index';
import { definePeriodic } from '../src/periodic/index';

// Until the packages' index.ts export them, add the factories to the package modules here (a no-op once they do).
vi.mock('@kq/redis', async (importOriginal) => ({
  ...(await importOriginal<Record<string, unknown>>()),
  ...(await import('../../redis/src/beat-lease')),
  ...(await import('../../redis/src/cycle-register')),
}));
vi.mock('@kq/amqp', async (importOriginal) => ({
  ...(await importOriginal<Record<string, unknown>>()),
  ...(await import('../../amqp/src/single-active-consumer-lease')),
  ...(await import('../../amqp/src/cycle-register')),
}));

const brokers = [
  { kind: 'memory', url: `memory://resolution-${randomUUID()}`, up: true },
  { kind: 'redis', url: `${brokerUrls.redis.replace(/\/\d*$/, '')}/0`, up: await brokerReachable('redis') },
  { kind: 'amqp', url: brokerUrls.amqp, up: await brokerReachable('amqp') },
];

describe.each(brokers)('on $kind', ({ kind, url, up }) => {
  it.skipIf(!up)('a beat and a periodic task use the transport’s own lease and register', async () => {
    const group = `resolution-${randomUUID()}`;
    const app = new App(group, { broker: url });
    app.log.level = 'critical';
    const beat = new Beat(app, { schedule: [], loglevel: 'critical' });
    const elected = new Promise<number>((resolve) => beat.once('elected', resolve));
    try {
      await beat.start();
      expect(await elected).toBeGreaterThan(0);
      const periodic = definePeriodic(app, `${group}.p`, async () => undefined, { every: 60 });
      expect((await periodic.register()).kind).toBe(kind);
      expect(await periodic.status()).toBeNull();
    } finally {
      await beat.stop();
      const channel = await app.connection.channel();
      if (kind === 'amqp') await channel.deleteQueue(`kq.beat.${group}`);
      if (kind === 'redis') {
        const { redisStore } = (await app.connection.transport()) as RedisTransport;
        await redisStore.commands.del(`_kq.beat.${group}.lease`, `_kq.beat.${group}.epoch`, `_kq.beat.${group}.state`);
      }
      await app.close();
    }
  });
});
