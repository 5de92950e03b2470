import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Queue, type Delivery, type OutgoingMessage } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import type { RedisTransport, RedisTransportOptions } from '../src/index';
import { redisUrl, useRedisFixture, waitFor, warnings } from './helpers/redis-test-env';
import { monitorFeed } from './helpers/monitor-feed';

// A consumer blocked in BRPOP hands the message it wakes with to its handler before the claim script has recorded
// it (RedisStore#takePoppedEarly). These check that settles still follow the record and nothing is lost.

const up = await brokerReachable('redis');
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const HOLDER = fileURLToPath(new URL('./fixtures/hold-delivery.ts', import.meta.url));

function message(text: string): OutgoingMessage {
  return { body: Buffer.from(text), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };
}

/** True once a connection whose name starts with `namePrefix` is blocked in BRPOP on the server. */
async function blockedInBrpop(redis: Redis, namePrefix: string): Promise<boolean> {
  const list = (await redis.client('LIST')) as string;
  // cmd= is the last command a connection ran; flags b says it is blocked in it now.
  return list
    .split('\n')
    .some((line) => /\bcmd=brpop\b/.test(line) && /\bflags=\S*b/.test(line) && (/\bname=(\S*)/.exec(line)?.[1] ?? '').startsWith(namePrefix));
}

describe.skipIf(!up)('messages that wake a blocked consumer', () => {
  const fixture = useRedisFixture('early', { pollIntervalMs: 5000 });
  const { prefix, children } = fixture;
  const transport = (name: string, options: RedisTransportOptions = {}): RedisTransport => fixture.transport({ connectionName: name, ...options });

  /** A consumer of `queue` (declared here) on its own transport, once it is blocked in BRPOP waiting for a message. */
  async function blockedConsumer(queue: string, prefetch: number) {
    const name = `kqtest-early-${randomUUID().slice(0, 8)}`;
    const consumerSide = transport(name);
    const channel = await consumerSide.createChannel();
    await channel.declareQueue(new Queue(queue));
    const received: Delivery[] = [];
    const consumer = await channel.consume({ queues: [queue], prefetch, onMessage: (delivery) => received.push(delivery) });
    await waitFor(() => blockedInBrpop(fixture.redis, name), 5000, 'the consumer to block in BRPOP');
    return { name, consumerSide, channel, consumer, received };
  }

  it('are recorded in unacked before their ack is applied, and in order with the rest of their batch', async () => {
    const { name, consumerSide, consumer, received } = await blockedConsumer('wake', 10);
    const publisher = transport(`${name}-pub`);
    const pubChannel = await publisher.createChannel();
    await Promise.all(['a', 'b', 'c'].map((text) => pubChannel.publish('', 'wake', message(text))));
    await waitFor(() => received.length === 3, 5000, 'three deliveries');
    expect(received.map((delivery) => delivery.body.toString())).toEqual(['a', 'b', 'c']);
    for (const delivery of received) {
      // Whatever the timing of the record, an ack issued at once is applied (not stale) and leaves nothing behind.
      await delivery.ack();
    }
    expect(await fixture.redis.hlen(`${prefix}unacked`)).toBe(0);
    expect(await fixture.redis.zcard(`${prefix}unacked_index`)).toBe(0);
    expect(consumerSide.stats().held).toBe(0);
    await consumer.cancel();
  });

  it('an ack made while the consumer waits again rides on the record of the next message: no script call of its own', async () => {
    const { name, consumer, received } = await blockedConsumer('linger', 2);
    const publisher = transport(`${name}-pub`);
    const pubChannel = await publisher.createChannel();
    const commands: string[][] = [];
    const monitored = await monitorFeed(fixture.redis);
    monitored.on('monitor', (_time, args) => void commands.push(args));
    const marker = `${prefix}marker-${randomUUID()}`;
    await pubChannel.publish('', 'linger', message('first'));
    await waitFor(() => received.length === 1, 5000, 'the first delivery');
    await waitFor(() => blockedInBrpop(fixture.redis, name), 5000, 'the consumer to wait again');
    const [first] = received as [Delivery];
    const acked = first.ack();
    await pubChannel.publish('', 'linger', message('second'));
    await acked;
    await waitFor(() => received.length === 2, 5000, 'the second delivery');
    await received[1]!.ack();
    await consumer.cancel();
    // The monitor's feed may lag behind the replies: wait until it shows a command sent after the round trips.
    await fixture.redis.echo(marker);
    await waitFor(() => commands.some((args) => args[1] === marker), 5000, 'the monitor to catch up');
    monitored.disconnect();
    const tag = first.deliveryInfo.deliveryTag;
    const scriptsNaming = commands.filter((args) => args[0]?.toLowerCase() === 'evalsha' && args.includes(tag));
    // One ack script call (two keys: tags and scores only), in the write that recorded the second message: right
    // after it (and the commands it runs) comes that record.
    expect(scriptsNaming.map((args) => args[2])).toEqual(['2']);
    const names = commands.map((args) => `${args[0]?.toLowerCase()} ${args[1]}`);
    const at = commands.indexOf(scriptsNaming[0] as string[]);
    expect(names.slice(at + 1, at + 8)).toContain(`hset ${prefix}unacked`);
    expect(await fixture.redis.hexists(`${prefix}unacked`, tag)).toBe(0);
  });

  it('are parsed once: the record reuses the envelope decoded for the hand-out', async () => {
    const { name, consumer, received } = await blockedConsumer('parse-once', 2);
    const publisher = transport(`${name}-pub`);
    const pubChannel = await publisher.createChannel();
    const body = `parse-once-${randomUUID()}`;
    const encoded = Buffer.from(body).toString('base64');
    const parse = vi.spyOn(JSON, 'parse');
    try {
      await pubChannel.publish('', 'parse-once', message(body));
      await waitFor(() => received.length === 1, 5000, 'the delivery');
      await received[0]!.ack();
      const parses = parse.mock.calls.filter(([text]) => typeof text === 'string' && text.includes(encoded));
      expect(parses).toHaveLength(1);
    } finally {
      parse.mockRestore();
    }
    await consumer.cancel();
  });

  it('go back to their queue, redelivered, when the channel closes before they are settled', async () => {
    const { channel, received } = await blockedConsumer('wake-close', 1);
    await fixture.redis.lpush(`${prefix}wake-close`, envelope('kept', randomUUID()));
    await waitFor(() => received.length === 1, 5000, 'the delivery');
    await channel.close();
    expect(await fixture.redis.llen(`${prefix}wake-close`)).toBe(1);
    expect(await fixture.redis.hlen(`${prefix}unacked`)).toBe(0);
    const restored = JSON.parse((await fixture.redis.lindex(`${prefix}wake-close`, 0)) as string) as { headers: Record<string, unknown> };
    expect(restored.headers['redelivered']).toBe(true);
  });

  it('are quarantined when kq cannot read them, whether or not the claim script could', async () => {
    const { name, received } = await blockedConsumer('wake-bad', 5);
    // The script finds a tag in this one (so it records it) but its body is no string: kq cannot make a message of it.
    const tag = randomUUID();
    await fixture.redis.lpush(`${prefix}wake-bad`, envelope('x', tag).replace(/"body": "[^"]*"/, '"body": 5'));
    await waitFor(async () => (await fixture.redis.llen(`${prefix}_kq.quarantine`)) === 1, 5000, 'the first quarantine');
    await waitFor(() => blockedInBrpop(fixture.redis, name), 5000, 'the consumer to block in BRPOP again');
    // This one the script cannot read either.
    await fixture.redis.lpush(`${prefix}wake-bad`, 'not json');
    await waitFor(async () => (await fixture.redis.llen(`${prefix}_kq.quarantine`)) === 2, 5000, 'the second quarantine');
    expect(received).toEqual([]);
    expect(await fixture.redis.hexists(`${prefix}unacked`, tag)).toBe(0);
    expect(await fixture.redis.zscore(`${prefix}unacked_index`, tag)).toBeNull();
    expect(warnings.filter((warning) => warning.includes('wake-bad'))).toHaveLength(2);
  });

  it('held by a consumer killed with SIGKILL come back once the lease runs out', async () => {
    const survivor = transport(`kqtest-early-survivor-${randomUUID().slice(0, 8)}`, { leaseMs: 1500, sweepIntervalMs: 200, pollIntervalMs: 200 });
    const channel = await survivor.createChannel();
    await channel.declareQueue(new Queue('wake-crash'));
    const childName = `kqtest-early-child-${randomUUID().slice(0, 8)}`;
    const child = spawn(process.execPath, ['--import', 'tsx', HOLDER, redisUrl(), prefix, 'wake-crash', '1500', childName], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
    await waitFor(() => lines.includes('ready'), 20_000, 'the child to consume');
    // The child's queue is empty, so it waits in BRPOP.
    await waitFor(() => blockedInBrpop(fixture.redis, childName), 5000, 'the child to block in BRPOP');
    await channel.publish('', 'wake-crash', message('survives a crash'));
    await waitFor(() => lines.some((line) => line.startsWith('{')), 10_000, 'the child to take the delivery');
    const held = JSON.parse(lines.find((line) => line.startsWith('{')) as string) as { tag: string; body: string };
    // Handed over early; once recorded it is crash safe.
    await waitFor(async () => (await fixture.redis.hexists(`${prefix}unacked`, held.tag)) === 1, 5000, 'the record');
    child.kill('SIGKILL');
    const redelivered: Delivery[] = [];
    const consumer = await channel.consume({ queues: ['wake-crash'], prefetch: 1, onMessage: (d) => redelivered.push(d) });
    await waitFor(() => redelivered.length === 1, 10_000, 'the redelivery');
    expect(redelivered[0]?.body.toString()).toBe('survives a crash');
    expect(redelivered[0]?.deliveryInfo).toMatchObject({ deliveryTag: held.tag, redelivered: true });
    await redelivered[0]?.ack();
    await consumer.cancel();
  });
});

/** A Kombu envelope as Python writes it. */
function envelope(text: string, tag: string): string {
  return (
    `{"body": "${Buffer.from(text).toString('base64')}", "content-encoding": "utf-8", "content-type": "text/plain", "headers": {}, ` +
    `"properties": {"delivery_info": {"exchange": "", "routing_key": "q"}, "priority": 0, "body_encoding": "base64", "delivery_tag": "${tag}"}}`
  );
}
