import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Connection } from '../src/connection';
import { Exchange } from '../src/exchange';
import { LamportClock } from '../src/lamport-clock';
import { Mailbox } from '../src/mailbox/mailbox';
import { NO_REPLY, type MailboxNode } from '../src/mailbox/mailbox-node';
import { globToRegExp } from '../src/glob-pattern';
import { matchNode } from '../src/mailbox/node-matcher';
import { MemoryBroker } from '../src/memory/memory-broker';
import { Producer } from '../src/producer';
import { pythonExceptionRepr, pythonSetRepr, pythonTupleRepr } from '../src/python-repr';

describe('Mailbox on the memory transport', () => {
  let connection: Connection;
  let mailbox: Mailbox;
  let nodes: MailboxNode[];

  const startNode = async (hostname: string): Promise<MailboxNode> => {
    const nodeMailbox = new Mailbox(connection, { namespace: 'test' });
    const node = nodeMailbox.node(hostname, {
      ping: () => ({ ok: 'pong' }),
      echo: (args) => args,
      slow: async (args) => {
        await new Promise((resolve) => setTimeout(resolve, Number(args['ms'] ?? 0)));
        return { ok: 'slept' };
      },
      fail: () => {
        throw new TypeError('bad things');
      },
      shutdown: () => NO_REPLY,
    });
    await node.listen();
    nodes.push(node);
    return node;
  };

  beforeEach(async () => {
    MemoryBroker.reset('mailbox-test');
    connection = new Connection('memory://mailbox-test');
    mailbox = new Mailbox(connection, { namespace: 'test' });
    nodes = [];
  });

  afterEach(async () => {
    for (const node of nodes) await node.close();
    await mailbox.close();
    await connection.close();
  });

  it('broadcasts ping and collects every reply', async () => {
    await startNode('a@host');
    await startNode('b@host');
    const replies = await mailbox.broadcast('ping', { reply: true, timeout: 200 });
    expect(replies).toHaveLength(2);
    expect(replies).toEqual(expect.arrayContaining([{ 'a@host': { ok: 'pong' } }, { 'b@host': { ok: 'pong' } }]));
  });

  it('calls only the destination and stops at its count', async () => {
    await startNode('a@host');
    await startNode('b@host');
    // The limit (1 destination) must end the wait: were it the 60 s timeout, the test itself would time out.
    const replies = await mailbox.call(['b@host'], 'echo', { x: 1 }, { timeout: 60_000 });
    expect(replies).toEqual([{ 'b@host': { x: 1 } }]);
  });

  it('honours limit and timeout', async () => {
    await startNode('a@host');
    await startNode('b@host');
    await startNode('c@host');
    expect(await mailbox.broadcast('ping', { reply: true, limit: 2, timeout: 2000 })).toHaveLength(2);
    const none = await mailbox.call(['nobody@host'], 'ping', {}, { timeout: 100 });
    expect(none).toEqual([]);
  });

  it('waits firstReplyTimeout for a first answer slower than timeout', async () => {
    await startNode('a@host');
    // With a 20 ms window (and a request expiring after it) this answer, 150 ms away, would be lost.
    const replies = await mailbox.broadcast('slow', { arguments: { ms: 150 }, reply: true, timeout: 20, firstReplyTimeout: 30_000 });
    expect(replies).toEqual([{ 'a@host': { ok: 'slept' } }]);
  });

  it('stops collecting once `until` says so', async () => {
    await startNode('a@host');
    await startNode('b@host');
    await startNode('c@host');
    // `until` must end the wait: were it the 60 s timeout, the test itself would time out.
    const replies = await mailbox.broadcast('ping', { reply: true, timeout: 60_000, until: (collected) => collected.some((reply) => 'b@host' in reply) });
    expect(replies.some((reply) => 'b@host' in reply)).toBe(true);
    expect(replies.length).toBeLessThanOrEqual(3);
  });

  it('says when nobody listened, and not when a node listened but stayed silent', async () => {
    let nobody = 0;
    const alone = await mailbox.broadcast('ping', { reply: true, timeout: 60_000, onNobodyListening: () => nobody++ });
    expect(alone).toEqual([]);
    expect(nobody).toBe(1); // and at once: were it the 60 s timeout, the test itself would time out

    await startNode('a@host');
    const silent = await mailbox.broadcast('shutdown', { reply: true, timeout: 50, onNobodyListening: () => nobody++ });
    expect(silent).toEqual([]);
    expect(nobody).toBe(1);
  });

  it('selects nodes by glob and by regex pattern', async () => {
    await startNode('worker1@alpha');
    await startNode('worker2@alpha');
    await startNode('worker1@beta');
    const glob = await mailbox.broadcast('ping', { reply: true, pattern: '*@alpha', matcher: 'glob', timeout: 200 });
    expect(glob.map((reply) => Object.keys(reply)[0]).sort()).toEqual(['worker1@alpha', 'worker2@alpha']);
    const regex = await mailbox.broadcast('ping', { reply: true, pattern: 'worker1@.*', matcher: 'pcre', timeout: 200 });
    expect(regex.map((reply) => Object.keys(reply)[0]).sort()).toEqual(['worker1@alpha', 'worker1@beta']);
  });

  it("answers an unknown command or a failing handler with Celery's error shape", async () => {
    await startNode('a@host');
    expect(await mailbox.call('a@host', 'no_such_cmd', {}, { timeout: 500 })).toEqual([{ 'a@host': { error: "KeyError('no_such_cmd')" } }]);
    expect(await mailbox.call('a@host', 'fail', {}, { timeout: 500 })).toEqual([{ 'a@host': { error: "TypeError('bad things')" } }]);
  });

  it('sends no reply when the handler says so', async () => {
    await startNode('a@host');
    expect(await mailbox.call('a@host', 'shutdown', {}, { timeout: 150 })).toEqual([]);
  });

  it('drops expired requests', async () => {
    const node = await startNode('a@host');
    expect(await node.handle({ method: 'ping', arguments: {}, destination: null, pattern: null, matcher: null }, { expires: Date.now() / 1000 - 1 })).toBeUndefined();
    expect(await node.handle({ method: 'ping', arguments: {}, destination: null, pattern: null, matcher: null }, { expires: 0 })).toEqual({ ok: 'pong' });
  });

  it('stamps requests and replies with the mailbox clock and adjusts on receipt', async () => {
    const node = await startNode('a@host');
    node.mailbox.clock.adjust(41);
    const before = mailbox.clock.value;
    await mailbox.call('a@host', 'ping', {}, { timeout: 500 });
    // The node saw our stamp (before + 1) and answered above its own 42; we adjusted past its reply stamp.
    expect(node.mailbox.clock.value).toBeGreaterThan(42);
    expect(mailbox.clock.value).toBeGreaterThan(node.mailbox.clock.value - 1);
    expect(mailbox.clock.value).toBeGreaterThan(before);
  });

  it('survives malformed requests and keeps answering', async () => {
    const node = await startNode('a@host');
    const errors: string[] = [];
    node.on('error', (error) => errors.push(error.message));
    const producer = new Producer(connection);
    const exchange = new Exchange('test.pidbox', { type: 'fanout', durable: false });
    for (const body of ['not an object', [1, 2, 3], { method: 42 }, { arguments: {} }, null]) {
      await producer.publish(body, { exchange, routingKey: '' });
    }
    await producer.publish(Buffer.from('{broken json'), { exchange, routingKey: '', contentType: 'application/json', contentEncoding: 'utf-8' });
    await producer.publish(Buffer.from('binary'), { exchange, routingKey: '', contentType: 'application/x-python-serialize' });
    expect(await mailbox.call('a@host', 'ping', {}, { timeout: 500 })).toEqual([{ 'a@host': { ok: 'pong' } }]);
    expect(errors.length).toBeGreaterThanOrEqual(6);
  });

  it('uses a clock separate from any app clock', () => {
    const appClock = new LamportClock();
    const own = new Mailbox(connection);
    expect(own.clock).not.toBe(appClock);
    expect(own.exchange).toMatchObject({ name: 'celery.pidbox', type: 'fanout', durable: false, autoDelete: false });
    expect(own.replyExchange).toMatchObject({ name: 'reply.celery.pidbox', type: 'direct', durable: false });
    expect(own.nodeQueue('w1@probe').name).toBe('w1@probe.celery.pidbox');
    expect(own.nodeQueue('w1@probe').toArguments()).toEqual({ 'x-message-ttl': 300000, 'x-expires': 10000 });
  });
});

describe('node matching', () => {
  it('implements fnmatch and re.match', () => {
    expect(matchNode('celery@host1', 'celery@host?')).toBe(true);
    expect(matchNode('celery@host1', 'celery@host[!1]')).toBe(false);
    expect(matchNode('celery@host1', 'celery@host[0-9]')).toBe(true);
    expect(matchNode('celery@host1', 'celery', 'pcre')).toBe(true); // re.match anchors at the start only
    expect(matchNode('celery@host1', 'host', 'pcre')).toBe(false);
    expect(globToRegExp('a.b*').test('a.bcd')).toBe(true);
    expect(globToRegExp('a.b*').test('aXbcd')).toBe(false);
  });
});

describe('python repr', () => {
  it('formats like Python', () => {
    expect(pythonTupleRepr([2, 2])).toBe('(2, 2)');
    expect(pythonTupleRepr(['x'])).toBe("('x',)");
    expect(pythonTupleRepr([{ a: [true, null] }, "it's"])).toBe(`({'a': [True, None]}, "it's")`);
    expect(pythonExceptionRepr('ValueError', 'kaboom')).toBe("ValueError('kaboom')");
    expect(pythonSetRepr(['a', 'b', 'a'])).toBe("{'a', 'b'}");
    expect(pythonSetRepr([])).toBe('set()');
  });
});
