import { Exchange, Queue, type Channel, type Delivery, type OutgoingMessage } from '@kq/core';
import { brokerReachable } from '@kq/test-harness';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RedisTransport } from '../src/index';
import { CLAIM } from '../src/lua-scripts';
import type { RedisClaim } from '../src/redis-claimer';
import { capture } from './helpers/monitor';
import { cleanup, makeTransport, quietLogger, rawClient, redisUrl, uniquePrefix, waitFor, warnings } from './helpers/redis-test-env';
import { monitorFeed } from './helpers/monitor-feed';

const up = await brokerReachable('redis');

function message(text: string, extra: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return {
    body: Buffer.from(text),
    contentType: 'text/plain',
    contentEncoding: 'utf-8',
    headers: {},
    properties: { deliveryMode: 2 },
    ...extra,
  };
}

describe.skipIf(!up)('RedisTransport on Kombu’s layout', () => {
  const prefix = uniquePrefix('transport');
  let redis: Redis;
  let transport: RedisTransport;
  let channel: Channel;

  beforeAll(() => {
    redis = rawClient();
  });
  afterAll(async () => {
    await cleanup(redis, prefix);
    redis.disconnect();
  });
  beforeEach(async () => {
    transport = makeTransport(prefix, { pollIntervalMs: 200 });
    channel = await transport.createChannel();
  });
  afterEach(async () => {
    await transport.close();
  });

  it('refuses a database number the server does not have, instead of silently using database 0', async () => {
    const outOfRange = new RedisTransport(redisUrl(99), { logger: quietLogger });
    await expect(outOfRange.connect()).rejects.toThrow(/Redis database 99 cannot be selected .*use a number below the server's "databases" setting/);
    await outOfRange.close();
  });

  it('publishes with LPUSH to the queue list and consumes FIFO', async () => {
    await channel.declareQueue(new Queue('fifo'));
    for (const n of [1, 2, 3]) await channel.publish('', 'fifo', message(`m${n}`));
    expect(await redis.llen(`${prefix}fifo`)).toBe(3);
    const first = await redis.lindex(`${prefix}fifo`, -1);
    expect(JSON.parse(first as string)).toMatchObject({ body: Buffer.from('m1').toString('base64'), properties: { body_encoding: 'base64' } });
    const got: string[] = [];
    const consumer = await channel.consume({
      queues: ['fifo'],
      prefetch: 10,
      onMessage: (delivery) => {
        got.push(delivery.body.toString());
        void delivery.ack();
      },
    });
    await waitFor(() => got.length === 3);
    expect(got).toEqual(['m1', 'm2', 'm3']);
    await consumer.cancel();
    await waitFor(async () => (await redis.hlen(`${prefix}unacked`)) === 0, 2000, 'acks');
  });

  it('records a delivery in unacked and unacked_index as Kombu does, and ack removes it', async () => {
    // The captured Python publish, consumed by kq: the unacked value must be what Kombu wrote.
    const published = capture('redis-5.2.6-basic.monitor.txt:12');
    await redis.lpush(`${prefix}celery`, published.args[1] as string);
    const delivery = await channel.get('celery');
    expect(delivery).not.toBeNull();
    const tag = '01ef6a61-da5e-4d10-a16c-c46d3968d1ef';
    expect(await redis.hget(`${prefix}unacked`, tag)).toBe(capture('redis-5.2.6-basic.monitor.txt:87').args[2]);
    // The score is the lease: its deadline (30 s by default) minus the visibility timeout (3600 s by default), which
    // Kombu's restore_visible reads as "delivered 3570 s ago".
    const score = Number(await redis.zscore(`${prefix}unacked_index`, tag));
    expect(Math.abs(score - (Date.now() / 1000 + 30 - 3600))).toBeLessThan(60);
    expect(delivery!.headers).toMatchObject({ task: 'proj.add', argsrepr: '(2, 2)' });
    expect(delivery!.deliveryInfo).toMatchObject({ exchange: '', routingKey: 'celery', queue: 'celery', deliveryTag: tag, redelivered: false });
    await delivery!.ack();
    expect(await redis.hexists(`${prefix}unacked`, tag)).toBe(0);
    expect(await redis.zscore(`${prefix}unacked_index`, tag)).toBeNull();
  });

  it('keeps no record of its own for what it holds: only Kombu’s unacked and unacked_index, one score per claim batch', async () => {
    await channel.declareQueue(new Queue('own'));
    for (const n of [1, 2, 3]) await channel.publish('', 'own', message(`m${n}`));
    const held: Delivery[] = [];
    const consumer = await channel.consume({ queues: ['own'], prefetch: 10, onMessage: (delivery) => void held.push(delivery) });
    await waitFor(() => held.length === 3);
    const keys = (await redis.keys(`${prefix}*`)).map((key) => key.slice(prefix.length)).sort();
    expect(keys).toEqual(['_kq.queues', 'unacked', 'unacked_index']);
    // Taken in one claim call: one lease for the three.
    const scores = await Promise.all(held.map((delivery) => redis.zscore(`${prefix}unacked_index`, delivery.deliveryInfo.deliveryTag)));
    expect(new Set(scores).size).toBe(1);
    for (const delivery of held) await delivery.ack();
    await consumer.cancel();
    expect(await redis.exists(`${prefix}unacked_index`, `${prefix}unacked`)).toBe(0);
  });

  it('keeps unacked_index a skiplist while a batch is held (a listpack insert scans the set), out of every scan by time, and leaves no trace', async () => {
    await channel.declareQueue(new Queue('pinned'));
    for (let n = 0; n < 20; n++) await channel.publish('', 'pinned', message(`m${n}`));
    const held: Delivery[] = [];
    const consumer = await channel.consume({ queues: ['pinned'], prefetch: 20, onMessage: (delivery) => void held.push(delivery) });
    await waitFor(() => held.length === 20);
    expect(await redis.call('OBJECT', 'ENCODING', `${prefix}unacked_index`)).toBe('skiplist');
    // Kombu's restore_visible asks for members older than now - visibility_timeout; even a ceiling far in the future
    // finds only the deliveries.
    const visible = await redis.zrevrangebyscore(`${prefix}unacked_index`, Date.now() / 1000 + 1e9, 0);
    expect(visible.sort()).toEqual(held.map((delivery) => delivery.deliveryInfo.deliveryTag).sort());
    for (const delivery of held) await delivery.ack();
    await consumer.cancel();
    expect(await redis.exists(`${prefix}unacked_index`, `${prefix}unacked`)).toBe(0);
    // One claim at a time keeps the small set as it is: nothing to pin.
    await channel.publish('', 'pinned', message('one'));
    const one = (await channel.get('pinned')) as Delivery;
    expect(await redis.zcard(`${prefix}unacked_index`)).toBe(1);
    await one.ack();
  });

  it('claims with native commands only: LMOVE from the most urgent non-empty list into an in-flight list, recorded by one MULTI, no script', async () => {
    await channel.declareQueue(new Queue('lmpop'));
    for (const priority of [6, 0, 0, 3]) await channel.publish('', 'lmpop', message(`p${priority}`, { properties: { priority } }));
    const commands: string[] = [];
    const monitored = await monitorFeed(redis);
    // Other test files share the server: only commands naming this queue's lists, or this test's records, count.
    let seenMarker = false;
    monitored.on('monitor', (_time, args) => {
      if (args[1] === `${prefix}marker`) seenMarker = true;
      const name = String(args[0]).toLowerCase();
      if (args.some((arg) => String(arg).startsWith(`${prefix}lmpop`))) commands.push(name);
      if (name === 'evalsha' && args[1] === CLAIM.sha) commands.push(name);
    });
    const claims = await transport.redisStore.claim(['lmpop'], { max: 10, blockMs: 0, noAck: false });
    // The monitor's feed may lag behind the replies: wait until it shows a command sent after the claim.
    await redis.echo(`${prefix}marker`);
    await waitFor(() => seenMarker, 5000, 'the monitor to catch up');
    monitored.disconnect();
    expect(claims.map((claim) => claim.message.body.toString())).toEqual(['p0', 'p0', 'p3', 'p6']);
    // A move per message wanted from each list, lists most urgent first; no claim script, no LMPOP, no RPOP.
    expect(commands.filter((name) => name === 'lmove').length).toBeGreaterThanOrEqual(4);
    expect(commands.filter((name) => ['lmpop', 'rpop', 'evalsha', 'eval'].includes(name))).toEqual([]);
    // Recorded as Kombu records them, and the in-flight lists and their registry entries are gone.
    for (const claim of claims) expect(await redis.hexists(`${prefix}unacked`, (claim as RedisClaim).tag)).toBe(1);
    expect(await redis.keys(`${prefix}_kq.inflight.*`)).toEqual([]);
    expect(await redis.zcard(`${prefix}_kq.inflight`)).toBe(0);
    for (const claim of claims) await transport.redisStore.ack(claim);
  });

  it('records exchange and routing key for any JSON layout, escaped as Python escapes them', async () => {
    const compact = JSON.stringify({
      properties: { delivery_tag: 'compact-tag', delivery_info: { exchange: 'ex "q"', routing_key: 'a\\b' } },
      body: 'eA==',
      headers: {},
    });
    await redis.lpush(`${prefix}layout`, compact);
    const delivery = (await channel.get('layout')) as Delivery;
    expect(delivery.deliveryInfo).toMatchObject({ deliveryTag: 'compact-tag', exchange: 'ex "q"', routingKey: 'a\\b' });
    expect(await redis.hget(`${prefix}unacked`, 'compact-tag')).toBe(`[${compact}, "ex \\"q\\"", "a\\\\b"]`);
    await delivery.ack();
    expect(await redis.hexists(`${prefix}unacked`, 'compact-tag')).toBe(0);
  });

  it('records exchange and routing key of Kombu-shaped envelopes however long the names and tag, or however short the envelope', async () => {
    // The claim reads these fields near the envelope's end, looking further back only when they are not close by.
    const kombuShaped = (tag: string, exchange: string, routingKey: string): string =>
      `{"body": "eA==", "headers": {}, "properties": {"delivery_info": {"exchange": "${exchange}", "routing_key": ` +
      `"${routingKey}"}, "priority": 0, "body_encoding": "base64", "delivery_tag": "${tag}"}}`;
    const cases = [
      { tag: 't', exchange: '', routingKey: 'q' },
      { tag: 'long-tag-'.repeat(30), exchange: 'x', routingKey: 'r' },
      { tag: 'tag-of-long-names', exchange: 'e'.repeat(300), routingKey: 'k'.repeat(400) },
    ];
    for (const { tag, exchange, routingKey } of cases) {
      const envelope = kombuShaped(tag, exchange, routingKey);
      await redis.lpush(`${prefix}shapes`, envelope);
      const delivery = (await channel.get('shapes')) as Delivery;
      expect(delivery.deliveryInfo).toMatchObject({ deliveryTag: tag, exchange, routingKey });
      expect(await redis.hget(`${prefix}unacked`, tag)).toBe(`[${envelope}, "${exchange}", "${routingKey}"]`);
      await delivery.ack();
    }
  });

  it('serves priority 0 first, then 3, 6, 9 (lower number first, as Kombu on Redis)', async () => {
    await channel.declareQueue(new Queue('prio'));
    for (const priority of [9, 6, 3, 0, 5, 1]) {
      await channel.publish('', 'prio', message(`p${priority}`, { properties: { priority } }));
    }
    expect(await redis.llen(`${prefix}prio\x06\x163`)).toBe(2);
    const got: string[] = [];
    for (;;) {
      const delivery = await channel.get('prio');
      if (!delivery) break;
      got.push(delivery.body.toString());
      await delivery.ack();
    }
    expect(got).toEqual(['p0', 'p1', 'p3', 'p5', 'p6', 'p9']);
  });

  it('requeue goes to the tail, close restores to the head, both flagged redelivered', async () => {
    await channel.declareQueue(new Queue('restore'));
    for (const n of [1, 2, 3]) await channel.publish('', 'restore', message(`r${n}`));
    const first = (await channel.get('restore')) as Delivery;
    await first.requeue();
    // r1 went to the tail: r2, r3, r1
    const second = (await channel.get('restore')) as Delivery;
    expect(second.body.toString()).toBe('r2');
    const otherChannel = await transport.createChannel();
    const held = (await otherChannel.get('restore')) as Delivery;
    expect(held.body.toString()).toBe('r3');
    await otherChannel.close(); // r3 back to the head
    const next = (await channel.get('restore')) as Delivery;
    expect(next.body.toString()).toBe('r3');
    expect(next.deliveryInfo.redelivered).toBe(true);
    expect(next.headers['redelivered']).toBe(true);
    const last = (await channel.get('restore')) as Delivery;
    expect(last.body.toString()).toBe('r1');
    expect(last.deliveryInfo.redelivered).toBe(true);
    await Promise.all([second.ack(), next.ack(), last.ack()]);
  });

  it('routes direct and topic exchanges through _kombu.binding sets with Kombu members', async () => {
    const direct = new Exchange('ex.direct', { type: 'direct' });
    const topic = new Exchange('ex.topic', { type: 'topic' });
    await channel.declareQueue(new Queue('d1', { exchange: direct, routingKey: 'k1' }));
    await channel.declareQueue(new Queue('t1', { exchange: topic, routingKey: 'a.*.c' }));
    await channel.declareQueue(new Queue('t2', { exchange: topic, routingKey: 'a.#' }));
    expect(await redis.smembers(`${prefix}_kombu.binding.ex.direct`)).toEqual(['k1\x06\x16\x06\x16d1']);
    expect((await redis.smembers(`${prefix}_kombu.binding.ex.topic`)).sort()).toEqual(
      ['a.*.c\x06\x16^a\\..*?[^\\.]\\.c$\x06\x16t1', 'a.#\x06\x16^a\\..*?$\x06\x16t2'].sort(),
    );
    await channel.publish('ex.direct', 'k1', message('d'));
    await channel.publish('ex.direct', 'nope', message('lost'));
    await channel.publish('ex.topic', 'a.b.c', message('abc'));
    await channel.publish('ex.topic', 'a.x', message('ax'));
    expect(await channel.checkQueue('d1')).toMatchObject({ messageCount: 1 });
    expect(await channel.checkQueue('t1')).toMatchObject({ messageCount: 1 });
    expect(await channel.checkQueue('t2')).toMatchObject({ messageCount: 2 });
    const stored = JSON.parse((await redis.lindex(`${prefix}t1`, 0)) as string) as { properties: { delivery_info: unknown } };
    expect(stored.properties.delivery_info).toEqual({ exchange: 'ex.topic', routing_key: 'a.b.c' });
  });

  it('publishes to an exchange only Kombu knows about (binding set) as direct', async () => {
    await redis.sadd(`${prefix}_kombu.binding.py.only`, 'rk\x06\x16\x06\x16py.q');
    await channel.publish('py.only', 'rk', message('to python queue'));
    expect(await redis.llen(`${prefix}py.q`)).toBe(1);
    // Declaring it for real (as fanout) replaces the guess instead of failing.
    await channel.declareExchange(new Exchange('py.only', { type: 'fanout' }));
  });

  it('counts, purges and deletes across all priority lists', async () => {
    await channel.declareQueue(new Queue('ops', { exchange: new Exchange('ops.x'), routingKey: 'ops' }));
    await channel.publish('', 'ops', message('a'));
    await channel.publish('', 'ops', message('b', { properties: { priority: 9 } }));
    expect(await channel.checkQueue('ops')).toMatchObject({ messageCount: 2 });
    expect(await channel.purgeQueue('ops')).toBe(2);
    await channel.publish('', 'ops', message('c', { properties: { priority: 4 } }));
    expect(await channel.deleteQueue('ops')).toBe(1);
    expect(await redis.exists(`${prefix}ops`, `${prefix}ops\x06\x163`)).toBe(0);
    expect(await redis.smembers(`${prefix}_kombu.binding.ops.x`)).toEqual([]);
  });

  it('deleting a queue removes its bindings on every exchange it was bound to, and on declared exchanges Python bound it to', async () => {
    await channel.declareQueue(new Queue('gone', { exchange: new Exchange('gone.x'), routingKey: 'a' }));
    // An exchange kq never declared, known from Kombu's binding set alone.
    await redis.sadd(`${prefix}_kombu.binding.py.x`, 'other\x06\x16\x06\x16py.q');
    await channel.bindQueue('gone', 'py.x', 'b');
    // A binding only a Python process made, on an exchange a kq process declared.
    await channel.declareExchange(new Exchange('declared.x'));
    await redis.sadd(`${prefix}_kombu.binding.declared.x`, 'c\x06\x16\x06\x16gone', 'c\x06\x16\x06\x16kept');
    await channel.deleteQueue('gone');
    expect(await redis.smembers(`${prefix}_kombu.binding.gone.x`)).toEqual([]);
    expect(await redis.smembers(`${prefix}_kombu.binding.py.x`)).toEqual(['other\x06\x16\x06\x16py.q']);
    expect(await redis.smembers(`${prefix}_kombu.binding.declared.x`)).toEqual(['c\x06\x16\x06\x16kept']);
    expect(await redis.exists(`${prefix}_kq.bound.gone`)).toBe(0);
  });

  it('moves a malformed envelope to the quarantine list and keeps consuming', async () => {
    warnings.length = 0;
    await channel.declareQueue(new Queue('bad'));
    await redis.lpush(`${prefix}bad`, 'this is not json');
    await redis.lpush(`${prefix}bad`, '{"body": {"not": "a string"}, "properties": {"delivery_tag": "tag-bad-body"}}');
    await channel.publish('', 'bad', message('good'));
    const got: string[] = [];
    const consumer = await channel.consume({ queues: ['bad'], onMessage: (d) => void d.ack().then(() => got.push(d.body.toString())) });
    await waitFor(() => got.length === 1);
    await consumer.cancel();
    expect(got).toEqual(['good']);
    const quarantined = (await redis.lrange(`${prefix}_kq.quarantine`, 0, -1)).map((entry) => JSON.parse(entry) as Record<string, unknown>);
    expect(quarantined).toHaveLength(2);
    expect(quarantined.map((entry) => entry['raw']).sort()).toEqual(
      ['this is not json', '{"body": {"not": "a string"}, "properties": {"delivery_tag": "tag-bad-body"}}'].sort(),
    );
    expect(quarantined.every((entry) => entry['queue'] === 'bad' && typeof entry['reason'] === 'string')).toBe(true);
    expect(await redis.hexists(`${prefix}unacked`, 'tag-bad-body')).toBe(0);
    expect(warnings.filter((line) => line.includes('quarantine'))).toHaveLength(2);
  });

  it('fans out over PUB/SUB on Kombu channel names', async () => {
    const events = new Exchange('ev', { type: 'fanout' });
    await channel.declareQueue(new Queue('ev.q1', { exchange: events, routingKey: '#' }));
    await channel.declareQueue(new Queue('ev.q2', { exchange: events, routingKey: 'worker.#' }));
    const got: string[] = [];
    const c1 = await channel.consume({ queues: ['ev.q1'], noAck: true, onMessage: (d) => got.push(`q1:${d.body.toString()}:${d.deliveryInfo.routingKey}`) });
    const c2 = await channel.consume({ queues: ['ev.q2'], noAck: true, onMessage: (d) => got.push(`q2:${d.body.toString()}`) });
    const seen: string[] = [];
    const spy = rawClient();
    await spy.psubscribe(`${prefix}/0.ev/*`);
    spy.on('pmessage', (_pattern: string, name: string) => seen.push(name));
    await channel.publish('ev', 'worker.online', message('hello'));
    await channel.publish('ev', 'task.multi', message('task'));
    await waitFor(() => got.length === 3 && seen.length === 2);
    expect(got.sort()).toEqual(['q1:hello:worker.online', 'q1:task:task.multi', 'q2:hello']);
    expect(seen).toEqual([`${prefix}/0.ev/worker.online`, `${prefix}/0.ev/task.multi`]);
    expect(await redis.llen(`${prefix}ev.q1`)).toBe(0);
    await c1.cancel();
    await c2.cancel();
    spy.disconnect();
  });

  it('holds delayed messages in Redis and promotes them when due', async () => {
    await channel.declareQueue(new Queue('later'));
    await channel.publish('', 'later', message('late', { properties: { priority: 6 } }), { delay: 400 });
    await channel.publish('', 'later', message('soon'), { delay: 100 });
    expect(await redis.zcard(`${prefix}_kq.delayed`)).toBe(2);
    expect(await redis.llen(`${prefix}later`)).toBe(0);
    const got: string[] = [];
    const consumer = await channel.consume({
      queues: ['later'],
      onMessage: (d) => void d.ack().then(() => got.push(d.body.toString())),
    });
    await waitFor(() => got.length === 2, 5000, 'delayed messages');
    await consumer.cancel();
    expect(got).toEqual(['soon', 'late']);
    expect(await redis.zcard(`${prefix}_kq.delayed`)).toBe(0);
  });

  it('describes where it connects without the password', () => {
    const described = new RedisTransport('redis://user:secret@127.0.0.1:6380/4').describe();
    expect(described).toEqual({ transport: 'redis', hostname: '127.0.0.1', port: 6380, virtualHost: '4', userid: 'user', ssl: false });
  });
});
