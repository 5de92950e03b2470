import { ConnectionLost, KqError, createTransport as createFromRegistry } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { RedisTransport, createTransport, parseBrokerUrl } from '../src/index';
import { normaliseOptions } from '../src/redis-options';

describe('broker URLs', () => {
  it('reads host, port, credentials and the database from redis://', () => {
    const endpoint = parseBrokerUrl('redis://us%40er:p%3Ass@10.0.0.5:6380/7', {});
    expect(endpoint.connection).toMatchObject({ host: '10.0.0.5', port: 6380, db: 7, username: 'us@er', password: 'p:ss' });
    expect(endpoint.description).toEqual({ transport: 'redis', hostname: '10.0.0.5', port: 6380, virtualHost: '7', userid: 'us@er', ssl: false });
    expect(parseBrokerUrl('redis://', {}).connection).toMatchObject({ host: 'localhost', port: 6379, db: 0 });
    expect(parseBrokerUrl('redis://h/3', { db: 5 }).db).toBe(5);
  });

  it('turns on TLS for rediss://, with ssl_cert_reqs=none as in Kombu', () => {
    expect(parseBrokerUrl('rediss://h:6390/0', {}).connection.tls).toEqual({});
    expect(parseBrokerUrl('rediss://h:6390/0?ssl_cert_reqs=CERT_NONE', {}).connection.tls).toEqual({ rejectUnauthorized: false });
    expect(parseBrokerUrl('rediss://h/0', {}).description.ssl).toBe(true);
  });

  it('lists every sentinel of a sentinel:// URL and needs a master name', () => {
    const endpoint = parseBrokerUrl('sentinel://:pw@s1:26379/2;sentinel://s2:26380', { masterName: 'mymaster' });
    expect(endpoint.connection).toMatchObject({
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
      ],
      name: 'mymaster',
      db: 2,
      password: 'pw',
    });
    expect(() => parseBrokerUrl('sentinel://s1:26379', {})).toThrow(/masterName/);
  });

  it('refuses what it cannot connect to, saying what would work', () => {
    expect(() => parseBrokerUrl('amqp://h', {})).toThrow(KqError);
    expect(() => parseBrokerUrl('redis://h/notanumber', {})).toThrow(/use a number/);
    expect(() => new RedisTransport('redis://h', { leaseMs: -1 })).toThrow(/leaseMs must be a positive number/);
    expect(() => new RedisTransport('redis://h', { prioritySteps: [0, 12] })).toThrow(/prioritySteps/);
  });
});

describe('options', () => {
  it("accepts Kombu's transport option names (Celery broker_transport_options)", () => {
    expect(
      normaliseOptions({ visibility_timeout: 7200, global_keyprefix: 'pfx:', priority_steps: [0, 5], polling_interval: 2, leaseMs: 10 }),
    ).toEqual({ visibilityTimeout: 7200, globalKeyprefix: 'pfx:', prioritySteps: [0, 5], pollIntervalMs: 2000, leaseMs: 10 });
  });

  it('is what core’s registry makes for redis://, rediss:// and sentinel:// URLs', async () => {
    const transport = await createFromRegistry('redis://127.0.0.1:6379/3', { global_keyprefix: 'x:' });
    expect(transport).toBeInstanceOf(RedisTransport);
    expect((transport as RedisTransport).layout.prefix).toBe('x:');
    expect(transport.capabilities).toMatchObject({ priorities: 'lower-first', fanout: 'live', delayedDelivery: true, crashRecovery: true });
    expect(createTransport('sentinel://s1:26379', { master_name: 'm' })).toBeInstanceOf(RedisTransport);
  });

  it('fails to connect with ConnectionLost (recoverable) when nothing listens', async () => {
    const transport = new RedisTransport('redis://127.0.0.1:1/0', { redisOptions: { retryStrategy: () => null } });
    await expect(transport.connect()).rejects.toBeInstanceOf(ConnectionLost);
    await transport.close();
  });
});
