/**
 * Beat and periodic tasks ask the broker URL's transport for their broker-side pieces (`transport.beatLease`,
 * `transport.cycleRegister`), and say what to do on a transport that has none.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RedisTransport } from '@kq/redis';
import { brokerReachable, brokerUrls } from '@kq/test-harness';
import { App } from '../src/app/app';
import { Beat } from '../src/beat/index';
import { definePeriodic } from '../src/beat/periodic/index';

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

describe.skipIf(!(await brokerReachable('postgres')))('on PostgreSQL: a beat lease, and no register', () => {
  it('kq beat uses the transport’s own lease; a periodic task says what to use instead', async () => {
    const group = `resolution-${randomUUID()}`;
    const app = new App(group, { broker: brokerUrls.postgres });
    app.log.level = 'critical';
    const beat = new Beat(app, { schedule: [], loglevel: 'critical' });
    const elected = new Promise<number>((resolve) => beat.once('elected', resolve));
    try {
      await beat.start();
      expect(await elected).toBeGreaterThan(0);
      const periodic = definePeriodic(app, 'resolution.p', async () => undefined, { every: 60 });
      await expect(periodic.register()).rejects.toThrow(/needs a broker-side register, which the postgres transport does not provide/);
    } finally {
      await beat.stop().catch(() => undefined);
      await app.close();
    }
  });
});
