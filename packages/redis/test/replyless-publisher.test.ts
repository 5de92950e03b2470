// Celery's events (heartbeats, task events) go out on a connection Redis never answers (`CLIENT REPLY OFF`): checked
// by the bytes that connection read (none after it was set up), against the real server, through a reconnect.
import { Exchange, Queue, type OutgoingMessage, type StoredMessage } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import { createServer, type Server } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ReplylessPublisher } from '../src/replyless-publisher';
import { killConnections, rawClient, redisUrl, useRedisFixture, waitFor } from './helpers/redis-test-env';

const up = await brokerReachable('redis');

function event(text: string, deliveryMode: 1 | 2): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: { deliveryMode } };
}

describe.skipIf(!up)('ReplylessPublisher', () => {
  const opened: Redis[] = [];
  afterEach(() => {
    for (const client of opened.splice(0)) client.disconnect();
  });

  function publisherAndClient(name: string): { publisher: ReplylessPublisher; client: () => Redis } {
    let last: Redis | undefined;
    const publisher = new ReplylessPublisher(() => {
      last = new Redis(redisUrl(), { lazyConnect: true, connectionName: name });
      opened.push(last);
      return last;
    });
    return { publisher, client: () => last as Redis };
  }

  it('publishes in order and reads nothing back, after it is set up', async () => {
    const channel = `kqtest:replyless:${process.pid}:order`;
    const spy = rawClient();
    opened.push(spy);
    const seen: string[] = [];
    spy.on('message', (_channel: string, text: string) => seen.push(text));
    await spy.subscribe(channel);
    const { publisher, client } = publisherAndClient('kqtest.replyless.order');
    // The first call starts connecting; until the connection is ready and set up, the caller publishes otherwise.
    expect(publisher.publish(channel, 'early')).toBe(false);
    await waitFor(() => publisher.publish(channel, '0'), 5000, 'the publisher to be ready');
    const readBefore = client().stream.bytesRead;
    expect(readBefore).toBeGreaterThan(0); // the set-up's replies (CLIENT SETNAME, the ready check) were read
    for (let n = 1; n < 200; n++) expect(publisher.publish(channel, String(n))).toBe(true);
    await waitFor(() => seen.length === 200, 5000, 'every message');
    expect(seen).toEqual(Array.from({ length: 200 }, (_, n) => String(n)));
    // Answered, the PUBLISHes would have brought back a reply each (":1\r\n").
    expect(client().stream.bytesRead).toBe(readBefore);
    publisher.close();
  });

  it('says no while its connection is down, and is unanswered again on the next one', async () => {
    const channel = `kqtest:replyless:${process.pid}:again`;
    const admin = rawClient();
    opened.push(admin);
    const { publisher, client } = publisherAndClient('kqtest.replyless.again');
    await waitFor(() => publisher.publish(channel, 'x'), 5000, 'the publisher to be ready');
    const first = client();
    expect(await killConnections(admin, 'kqtest.replyless.again')).toBe(1);
    await waitFor(() => first.status !== 'ready', 5000, 'the connection to drop');
    expect(publisher.publish(channel, 'while down')).toBe(false);
    await waitFor(() => publisher.publish(channel, 'back'), 10_000, 'the publisher to reconnect');
    const readBefore = first.stream.bytesRead;
    for (let n = 0; n < 50; n++) publisher.publish(channel, 'again');
    const list = (await admin.client('LIST')) as string;
    expect(list.split('\n').filter((line) => line.includes('name=kqtest.replyless.again'))).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(first.stream.bytesRead).toBe(readBefore);
    publisher.close();
  });
});

/**
 * A server that speaks just enough RESP for ioredis and has no `CLIENT REPLY` (as some proxies and restricted managed
 * servers): OK to everything else, an error to that, and it counts the PUBLISHes it is sent.
 */
async function serverWithoutClientReply(): Promise<{ server: Server; port: number; published: () => number }> {
  const INFO = '# Server\r\nloading:0\r\n';
  let published = 0;
  const server = createServer((socket) => {
    socket.on('data', (data) => {
      for (const command of data.toString().split(/\*\d+\r\n/).filter(Boolean)) {
        const words = command.split('\r\n').filter((_, index) => index % 2 === 1).map((word) => word.toUpperCase());
        if (words[0] === 'INFO') socket.write(`$${INFO.length}\r\n${INFO}\r\n`);
        else if (words[0] === 'CLIENT' && words[1] === 'REPLY') socket.write("-ERR unknown subcommand 'REPLY'\r\n");
        else if (words[0] === 'PUBLISH') {
          published++;
          socket.write(':0\r\n');
        } else socket.write('+OK\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port, published: () => published };
}

describe('ReplylessPublisher on a server without CLIENT REPLY', () => {
  it('gives up on its connection and leaves every publish to the answered way', async () => {
    const { server, port, published } = await serverWithoutClientReply();
    let client: Redis | undefined;
    const errors: string[] = [];
    const publisher = new ReplylessPublisher(() => {
      client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, connectionName: 'kqtest.noreply' });
      client.on('error', (error: Error) => errors.push(error.message));
      return client;
    });
    expect(publisher.publish('ch', 'first')).toBe(false);
    await waitFor(() => client?.status === 'end', 5000, 'the publisher to close its connection');
    expect(publisher.publish('ch', 'later')).toBe(false);
    expect(published()).toBe(0);
    expect(errors).toEqual([]);
    publisher.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});

describe.skipIf(!up)('the Redis fanout bus', () => {
  const fixture = useRedisFixture('replyless');

  it('sends transient publishes nobody counts unanswered, and counts mandatory and persistent ones', async () => {
    const transport = fixture.transport();
    const channel = await transport.createChannel();
    const events = new Exchange('kqev', { type: 'fanout' });
    await channel.declareQueue(new Queue('kqev.q', { exchange: events, routingKey: '#' }));
    const got: string[] = [];
    const consumer = await channel.consume({ queues: ['kqev.q'], noAck: true, onMessage: (d) => got.push(d.body.toString()) });
    const bus = transport.store.fanoutBus;
    if (!bus) throw new Error('the Redis store has a fanout bus');
    const stored = (text: string, deliveryMode: 1 | 2): StoredMessage => ({
      ...event(text, deliveryMode),
      exchange: 'kqev',
      routingKey: 'worker.heartbeat',
      deliveryTag: '',
    } as StoredMessage);
    // The first unanswered publish opens the connection (and is counted the usual way meanwhile).
    await waitFor(async () => (await bus.publish('kqev', 'worker.heartbeat', stored('warm', 1), { mandatory: false })) === undefined, 5000, 'the unanswered connection');
    expect(await bus.publish('kqev', 'worker.heartbeat', stored('heartbeat', 1), { mandatory: false })).toBeUndefined();
    expect(await bus.publish('kqev', 'worker.heartbeat', stored('mandatory', 1), { mandatory: true })).toBe(1);
    expect(await bus.publish('kqev', 'worker.heartbeat', stored('persistent', 2), { mandatory: false })).toBe(1);
    // Through the channel as the event dispatcher publishes (transient, not mandatory): received all the same.
    await channel.publish('kqev', 'worker.heartbeat', event('dispatched', 1));
    await waitFor(() => got.includes('dispatched') && got.includes('persistent'), 5000, 'the messages');
    expect(got).toEqual(expect.arrayContaining(['heartbeat', 'mandatory', 'persistent', 'dispatched']));
    const list = (await fixture.redis.client('LIST')) as string;
    const ours = list.split('\n').filter((line) => line.includes(`name=${transport.clientNamePrefix}`));
    expect(ours.some((line) => / name=\S+\.pub /.test(line) && /\bcmd=publish\b/.test(line))).toBe(true);
    await consumer.cancel();
    await transport.close();
    await waitFor(async () => !((await fixture.redis.client('LIST')) as string).includes(`name=${transport.clientNamePrefix}pub`), 5000, 'the pub connection to close');
  });
});
