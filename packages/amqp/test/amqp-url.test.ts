import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { KqError } from '@kq/core';
import { AmqpTransport, createTransport, parseAmqpUrl } from '../src/index';

describe('AMQP URLs, read as Kombu reads them', () => {
  it('takes host, port, credentials and vhost apart', () => {
    expect(parseAmqpUrl('amqp://user:p%40ss@broker.example:5673/my%2Fvhost?heartbeat=15')).toEqual({
      protocol: 'amqp',
      hostname: 'broker.example',
      port: 5673,
      username: 'user',
      password: 'p@ss',
      vhost: 'my/vhost',
      heartbeat: 15,
    });
  });

  it.each([
    ['amqp://h', '/'],
    ['amqp://h/', '/'],
    ['amqp://h//', '/'],
    ['amqp://h/%2F', '/'],
    ['amqp://h/celery', 'celery'],
  ])('%s has vhost %s', (url, vhost) => {
    expect(parseAmqpUrl(url).vhost).toBe(vhost);
  });

  it('defaults to guest/guest, port 5672, and 5671 for amqps', () => {
    expect(parseAmqpUrl('amqp://h')).toMatchObject({ username: 'guest', password: 'guest', port: 5672 });
    expect(parseAmqpUrl('amqps://h')).toMatchObject({ protocol: 'amqps', port: 5671 });
  });

  it('refuses other schemes and bad parameters with a KqError', () => {
    expect(() => parseAmqpUrl('redis://h')).toThrow(KqError);
    expect(() => parseAmqpUrl('amqp://h?heartbeat=soon')).toThrow(/heartbeat/);
  });

  it('describes the transport without the password, with the declared capabilities', () => {
    const transport = createTransport('amqps://u:secret@h:1234/v', {});
    expect(transport).toBeInstanceOf(AmqpTransport);
    expect(transport.describe()).toEqual({ transport: 'amqp', hostname: 'h', port: 1234, virtualHost: 'v', userid: 'u', ssl: true, loginMethod: 'PLAIN' });
    expect(transport.capabilities).toEqual({
      exchangeTypes: ['direct', 'topic', 'fanout', 'headers'],
      fanout: 'queued',
      priorities: 'higher-first',
      maxPriority: 255,
      messageTtl: true,
      deadLettering: true,
      delayedDelivery: true,
      publisherConfirms: true,
      crashRecovery: true,
      redeliveredFlag: true,
      requeuePosition: 'head',
    });
  });

  it('a URL it cannot read is named without its password, in the message and in whatever is printed of the error', () => {
    let error: unknown;
    try {
      parseAmqpUrl('amqp://guest:hunter2@rabbit host:5672//');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(KqError);
    expect((error as Error).message).toBe('"amqp://guest:**@rabbit host:5672//" is not a valid broker URL; expected amqp://user:password@host:port/vhost.');
    // Node's URL error carries its whole input: chained as the cause, util.inspect (console.error) printed it
    expect(inspect(error)).not.toContain('hunter2');
  });
});
