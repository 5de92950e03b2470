import { KqError, createTransport as createFromRegistry } from '@kq/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashedPart, keySlot } from '../src/cluster-slot';
import { RedisTransport, parseBrokerUrl } from '../src/index';
import { RedisBeatLease } from '../src/beat-lease';
import { isConnectionError } from '../src/connection-errors';
import { DEFAULT_KEY_NAMES, KOMBU_SEP, KeyLayout, type QueueScopedName } from '../src/key-layout';

// No cluster needed here: the key → slot mapping, the cluster layout's keys, and how cluster mode is asked for.

const SCOPED: readonly QueueScopedName[] = ['unacked', 'unackedIndex', 'unackedMutex', 'delayed', 'quarantine'];

function layout(prefix = '', cluster = true, steps: readonly number[] = [0, 3, 6, 9]): KeyLayout {
  return new KeyLayout({ prefix, sep: KOMBU_SEP, steps, fanoutPrefix: '/0.', fanoutPatterns: true, names: DEFAULT_KEY_NAMES, cluster });
}

/** Every key a script working on `queue` touches in the cluster layout. */
function scriptKeys(keys: KeyLayout, queue: string): string[] {
  return [...keys.queueKeys(queue), ...SCOPED.map((name) => keys.scopedKey(name, queue))];
}

/** CRC16/XMODEM bit by bit, as the Redis Cluster specification states it: the reference for the table version. */
function referenceSlot(key: string): number {
  let crc = 0;
  for (const byte of hashedPart(key)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

const prefixes = fc.string({ maxLength: 12 }).filter((text) => !/[{}]/.test(text));
const queues = fc.string({ minLength: 1, maxLength: 24, unit: 'binary' }).filter((name) => !name.startsWith('}'));

describe('cluster key slots', () => {
  it('match the values Redis documents (CLUSTER KEYSLOT)', () => {
    expect(keySlot('123456789')).toBe(12739); // the CRC16 check value 0x31C3
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('bar')).toBe(5061);
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    // An empty tag hashes the whole key; only the first {…} counts.
    expect(keySlot('foo{}{bar}')).toBe(referenceSlot('foo{}{bar}'));
    expect(hashedPart('foo{}{bar}').toString()).toBe('foo{}{bar}');
    expect(hashedPart('foo{{bar}}zap').toString()).toBe('{bar');
  });

  it('agree with the bitwise CRC16 for any key', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (key) => keySlot(key) === referenceSlot(key)));
  });
});

describe('the cluster layout', () => {
  it('keeps every key a script touches for one queue in one hash slot', () => {
    fc.assert(
      fc.property(prefixes, queues, (prefix, queue) => {
        const slots = new Set(scriptKeys(layout(prefix), queue).map((key) => keySlot(key)));
        expect(slots.size).toBe(1);
        expect([...slots][0]).toBe(keySlot(`{${queue}}`));
      }),
    );
  });

  it('gives different queues different keys (no structure of one queue is another queue’s)', () => {
    fc.assert(
      fc.property(prefixes, queues, queues, (prefix, a, b) => {
        fc.pre(a !== b);
        const keys = layout(prefix);
        const ofA = new Set(scriptKeys(keys, a));
        for (const key of scriptKeys(keys, b)) expect(ofA.has(key)).toBe(false);
      }),
    );
  });

  it('reads back the queue and step of its own list keys', () => {
    fc.assert(
      fc.property(prefixes, queues, fc.constantFrom(0, 3, 6, 9), (prefix, queue, step) => {
        const keys = layout(prefix);
        expect(keys.parseListKey(keys.listKey(queue, step))).toEqual({ queue, step });
      }),
    );
  });

  it('puts kq’s shared keys in one slot, so their transactions stay legal', () => {
    fc.assert(
      fc.property(prefixes, fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 }), (prefix, exchange, queue) => {
        const keys = layout(prefix);
        const shared = [
          keys.key('exchanges'),
          keys.key('queues'),
          keys.key('dead'),
          keys.bindingKey(exchange),
          keys.fanoutBindingsKey(queue),
          keys.boundExchangesKey(queue),
          keys.clusterQueuesKey(),
        ];
        expect(new Set(shared.map((key) => keySlot(key))).size).toBe(1);
      }),
    );
  });

  it('spreads queues over the slots (the point of a per-queue tag)', () => {
    const keys = layout('kq:');
    const slots = new Set(Array.from({ length: 64 }, (_, index) => keySlot(keys.listKey(`queue-${index}`, 0))));
    expect(slots.size).toBeGreaterThan(60);
  });

  it('leaves Kombu’s layout exactly as it was when cluster mode is off', () => {
    const keys = layout('p:', false);
    expect(keys.listKey('celery', 0)).toBe('p:celery');
    expect(keys.listKey('celery', 3)).toBe(`p:celery${KOMBU_SEP}3`);
    expect(SCOPED.map((name) => keys.scopedKey(name, 'celery'))).toEqual(SCOPED.map((name) => `p:${DEFAULT_KEY_NAMES[name]}`));
    expect(keys.bindingKey('celery')).toBe('p:_kombu.binding.celery');
  });

  it('refuses a prefix with braces, and queue names whose tag would be empty, saying what to do', () => {
    expect(() => layout('a{b}')).toThrow(/global_keyprefix without "\{" or "\}"/);
    expect(() => layout('a{b}', false)).not.toThrow();
    expect(() => layout().listKey('', 0)).toThrow(KqError);
    expect(() => layout().scopedKey('unacked', '}x')).toThrow(/Rename the queue/);
  });
});

describe('asking for cluster mode', () => {
  it('reads redis+cluster:// URLs with several nodes, credentials and TLS', () => {
    const endpoint = parseBrokerUrl('redis+cluster://user:pw@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002/', {});
    expect(endpoint.cluster?.nodes).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    expect(endpoint.connection).toMatchObject({ username: 'user', password: 'pw' });
    expect(endpoint.connection.host).toBeUndefined();
    expect(endpoint.description).toMatchObject({ hostname: '10.0.0.1', port: 7000, virtualHost: '0' });
    expect(parseBrokerUrl('rediss+cluster://h1:7000', {}).connection.tls).toEqual({});
    expect(parseBrokerUrl('redis+cluster://h1:7000;redis+cluster://h2', {}).cluster?.nodes).toEqual([
      { host: 'h1', port: 7000 },
      { host: 'h2', port: 6379 },
    ]);
  });

  it('takes the cluster option with a redis:// URL or with nodes of its own', () => {
    expect(parseBrokerUrl('redis://h:7000', { cluster: true }).cluster?.nodes).toEqual([{ host: 'h', port: 7000 }]);
    expect(parseBrokerUrl(undefined, { cluster: { nodes: [{ host: 'a', port: 1 }] } }).cluster?.nodes).toEqual([{ host: 'a', port: 1 }]);
    expect(parseBrokerUrl('redis://h:7000', {}).cluster).toBeUndefined();
    expect(new RedisTransport('redis+cluster://h:7000/').layout.cluster).toBe(true);
    expect(new RedisTransport('redis://h:7000/').layout.cluster).toBe(false);
  });

  it('refuses what a cluster cannot do, saying what would work', () => {
    expect(() => parseBrokerUrl('redis+cluster://h:7000/3', {})).toThrow(/only database 0/);
    expect(() => parseBrokerUrl('redis://h/2', { cluster: true })).toThrow(/only database 0/);
    expect(() => parseBrokerUrl('sentinel://s:26379', { cluster: true, masterName: 'm' })).toThrow(/cannot go through Sentinel/);
    expect(() => parseBrokerUrl('redis+cluster:///', {})).toThrow(/names no cluster node/);
    expect(() => new RedisTransport('redis+cluster://h:7000/', { globalKeyprefix: '{x}' })).toThrow(/without "\{"/);
  });

  it('is reached through core’s transport registry', async () => {
    const transport = await createFromRegistry('redis+cluster://127.0.0.1:7000/');
    expect(transport).toBeInstanceOf(RedisTransport);
    expect((transport as RedisTransport).layout.cluster).toBe(true);
  });

  it('takes a cluster in transition (slot half migrated, no master yet) for a failure to retry, not a final one', () => {
    // What ioredis reports while a slot migrates or a master fails over: acks and claims wait these out.
    for (const message of [
      'TRYAGAIN Multiple keys request during rehashing of slot',
      'Too many Cluster redirections. Last error: ReplyError: TRYAGAIN Multiple keys request during rehashing of slot',
      'Too many Cluster redirections. Last error: ReplyError: MOVED 1331 127.0.0.1:17034',
      'CLUSTERDOWN The cluster is down',
    ]) {
      expect(isConnectionError(new Error(message))).toBe(true);
    }
    // A script's own error is not: retrying would fail the same way.
    expect(isConnectionError(new Error('ERR user_script:1: Script attempted to access nonexistent global variable'))).toBe(false);
    expect(isConnectionError(new Error('CROSSSLOT Keys in request don\'t hash to the same slot'))).toBe(false);
  });

  it('keeps kq beat’s lease, epoch, state and outbox in one slot on a cluster (their scripts reach one slot)', () => {
    const transport = new RedisTransport('redis+cluster://127.0.0.1:7000/', { globalKeyprefix: 'app:' });
    const keys = new RedisBeatLease(transport, { group: 'g', leaseMs: 1000, renewIntervalMs: 100 }).keys;
    const names = [keys.lease, keys.epoch, keys.state, keys.outbox as string];
    expect(names).toEqual(['app:_kq.beat{kq.beat.g}.lease', 'app:_kq.beat{kq.beat.g}.epoch', 'app:_kq.beat{kq.beat.g}.state', 'app:_kq.beat{kq.beat.g}.outbox']);
    expect(new Set(names.map((name) => keySlot(name))).size).toBe(1);
    // Kombu's layout keeps its names, and has no outbox (its commit pushes in the same script).
    expect(new RedisBeatLease(new RedisTransport('redis://127.0.0.1:6379/0'), { group: 'g', leaseMs: 1000, renewIntervalMs: 100 }).keys).toEqual({
      lease: '_kq.beat.g.lease',
      epoch: '_kq.beat.g.epoch',
      state: '_kq.beat.g.state',
    });
  });
});
