// EventReceiver and EventDispatcher (docs/wire.md#events, docs/wire.md#lamport-clocks): event shape, exchange type per
// transport, groups, the receiver's clock rules (task-sent!), list bodies, malformed input, the heartbeat wake-up, and
// a dispatcher that never throws.
import { Connection, Exchange, LamportClock, Mailbox, MemoryBroker, type TransportCapabilities } from '@kq/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createEvent, eventGroup, eventRoutingKey, utcOffsetHours, type ReceivedEvent } from '../src/events/event';
import { EventDispatcher } from '../src/events/event-dispatcher';
import { eventExchange } from '../src/events/event-exchange';
import { EventReceiver, prepareEvent } from '../src/events/event-receiver';
import { memoryBrokerName, waitFor } from './fixtures/cluster/helpers';

const capabilities = (fanout: TransportCapabilities['fanout']): TransportCapabilities => ({
  exchangeTypes: ['direct', 'topic', 'fanout', 'headers'],
  fanout,
  priorities: null,
  maxPriority: 0,
  messageTtl: false,
  deadLettering: false,
  delayedDelivery: false,
  publisherConfirms: false,
  crashRecovery: false,
});

describe('events', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  const connect = (broker: string): Connection => {
    const connection = new Connection(`memory://${broker}`);
    cleanups.push(() => connection.close());
    return connection;
  };

  it("builds events in Python's field order, with Celery's routing keys and groups", () => {
    const event = createEvent('task-succeeded', { uuid: 'u', result: '4', runtime: 0.5 }, { hostname: 'w@h', pid: 7, clock: 3, utcoffset: -2, timestamp: 100.5 });
    expect(Object.keys(event)).toEqual(['hostname', 'utcoffset', 'pid', 'clock', 'uuid', 'result', 'runtime', 'timestamp', 'type']);
    expect(event).toMatchObject({ hostname: 'w@h', utcoffset: -2, pid: 7, clock: 3, timestamp: 100.5, type: 'task-succeeded' });
    expect(eventRoutingKey('worker-elect-ack')).toBe('worker.elect.ack');
    expect(eventGroup('task-succeeded')).toBe('task');
    expect(eventGroup('worker')).toBe('worker');
    // Hours west of UTC, floor-divided (UTC+2 ⇒ -2, UTC-5 ⇒ 5, UTC+5:30 ⇒ -6, UTC ⇒ 0 not -0).
    const zone = (minutesWest: number): Date => ({ getTimezoneOffset: () => minutesWest }) as Date;
    expect([utcOffsetHours(zone(-120)), utcOffsetHours(zone(300)), utcOffsetHours(zone(-330)), Object.is(utcOffsetHours(zone(0)), 0)]).toEqual([-2, 5, -6, true]);
  });

  it('uses a topic exchange, except fanout where fanout is live PUB/SUB (Redis), as Celery', () => {
    expect(eventExchange(capabilities('queued'))).toMatchObject({ name: 'celeryev', type: 'topic', durable: true, autoDelete: false });
    expect(eventExchange(capabilities('live'), 'myev')).toMatchObject({ name: 'myev', type: 'fanout' });
    expect(eventExchange({ ...capabilities('queued'), exchangeTypes: ['direct', 'fanout'] }).type).toBe('fanout');
  });

  it('receives what a dispatcher sends, filtered by groups and binding key, adjusting the clock to each event', async () => {
    const broker = memoryBrokerName('events');
    const senderClock = new LamportClock(100);
    const dispatcher = new EventDispatcher(connect(broker), { hostname: 'w@h', clock: senderClock, groups: ['worker'] });
    const monitorClock = new LamportClock();
    const all: ReceivedEvent[] = [];
    const workerOnly: ReceivedEvent[] = [];
    const monitor = new EventReceiver(connect(broker), { clock: monitorClock, handlers: { '*': (e) => all.push(e) } });
    const gossipLike = new EventReceiver(connect(broker), { routingKey: 'worker.#', handlers: { '*': (e) => workerOnly.push(e) } });
    await monitor.start();
    await gossipLike.start();
    cleanups.push(() => monitor.close(), () => gossipLike.close());

    expect(dispatcher.send('task-received', { uuid: 'dropped' })).toBeUndefined(); // group not enabled
    const online = dispatcher.send('worker-online', { freq: 2 });
    dispatcher.groups.add('task');
    dispatcher.send('task-started', { uuid: 'u1' });
    await dispatcher.flush();
    await waitFor(() => all.length === 2 && workerOnly.length === 1, 5000, 'the events');
    expect(online?.clock).toBe(101);
    expect(all.map((e) => [e.type, e.clock])).toEqual([['worker-online', 101], ['task-started', 102]]);
    expect(workerOnly.map((e) => e.type)).toEqual(['worker-online']);
    expect(monitorClock.value).toBe(103); // adjust(101) → 102, adjust(102) → 103
    expect(typeof all[0]?.local_received).toBe('number');
  });

  it("places task-sent just before its own clock (clients don't sync), forwards for events without a clock", () => {
    const clock = new LamportClock(50);
    const sent = prepareEvent({ type: 'task-sent', clock: 9999, uuid: 'x', hostname: 'gen1@h', timestamp: 1 }, clock);
    expect(sent.clock).toBe(49);
    expect(clock.value).toBe(51); // adjust(49) = max(50, 49) + 1
    const fresh = new LamportClock();
    expect(prepareEvent({ type: 'task-sent', clock: 5, hostname: 'gen1@h', timestamp: 1 }, fresh).clock).toBe(0); // (0 || 1) - 1
    const blind = prepareEvent({ type: 'worker-heartbeat', clock: null, hostname: 'w', timestamp: 1 }, clock);
    expect(blind.clock).toBe(52);
    const missing = prepareEvent({ type: 'worker-heartbeat', hostname: 'w', timestamp: 1 }, clock);
    expect(missing.clock).toBe(53);
    prepareEvent({ type: 'worker-heartbeat', clock: 500, hostname: 'w', timestamp: 1 }, clock);
    expect(clock.value).toBe(501);
    // Timestamps move into this zone: sent from UTC-2 (utcoffset 2) while we are at utcoffset 0.
    const shifted = prepareEvent({ type: 'x-y', clock: 1, utcoffset: utcOffsetHours() + 2, timestamp: 10_000 }, clock);
    expect(shifted.timestamp).toBe(10_000 - 2 * 3600);
    expect(prepareEvent({ type: 'x-y', clock: 1, utcoffset: 5, timestamp: 10_000 }, clock, { localize: false }).timestamp).toBe(10_000);
  });

  it('accepts a list of events (Python batches task events) and skips what is not an event', async () => {
    const broker = memoryBrokerName('events-list');
    const connection = connect(broker);
    const got: ReceivedEvent[] = [];
    const errors: Error[] = [];
    const receiver = new EventReceiver(connection, { handlers: { 'task-received': (e) => got.push(e), '*': () => undefined } });
    receiver.on('error', (error) => errors.push(error));
    await receiver.start();
    cleanups.push(() => receiver.close());
    const channel = await connection.channel();
    const publish = (body: string, routingKey = 'task.multi') =>
      channel.publish('celeryev', routingKey, { body: Buffer.from(body), contentType: 'application/json', contentEncoding: 'utf-8', headers: {}, properties: { deliveryMode: 1 } });
    await publish(JSON.stringify([{ type: 'task-received', uuid: 'a', clock: 4, hostname: 'py@h', timestamp: 1 }, 'junk', { type: 'task-received', uuid: 'b', clock: 5, hostname: 'py@h', timestamp: 1 }]));
    await publish(JSON.stringify(42), 'task.received');
    await publish('not json at all', 'task.received');
    await publish(JSON.stringify({ type: 'task-received', uuid: 'c', clock: 6, hostname: 'py@h', timestamp: 1 }), 'task.received');
    await waitFor(() => got.length === 3, 5000, 'three events');
    expect(got.map((e) => e['uuid'])).toEqual(['a', 'b', 'c']);
    expect(errors.length).toBeGreaterThanOrEqual(3);
  });

  it('asks every worker for a heartbeat when it starts (wakeup)', async () => {
    const broker = memoryBrokerName('events-wakeup');
    const mailbox = new Mailbox(connect(broker));
    const asked: string[] = [];
    const node = mailbox.node('w@h', { heartbeat: () => asked.push('heartbeat') });
    await node.listen();
    cleanups.push(() => node.close());
    const receiver = new EventReceiver(connect(broker), { wakeup: true, mailbox: new Mailbox(connect(broker)) });
    await receiver.start();
    cleanups.push(() => receiver.close());
    await waitFor(() => asked.length === 1, 5000, 'the heartbeat request');
  });

  it('a dispatcher never throws: failures are reported, and past maxPending events are dropped', async () => {
    const broker = memoryBrokerName('events-fail');
    const connection = connect(broker);
    await (await connection.channel()).declareExchange(new Exchange('celeryev', { type: 'direct' }));
    const errors: string[] = [];
    const dispatcher = new EventDispatcher(connection, { hostname: 'w@h', maxPending: 2, onError: (error) => errors.push(error.message) });
    for (let i = 0; i < 5; i++) expect(() => dispatcher.send('worker-heartbeat', {})).not.toThrow();
    await dispatcher.flush();
    expect(dispatcher.dropped).toBe(3);
    expect(errors.filter((m) => m.startsWith('Dropped event'))).toHaveLength(3);
    expect(errors.filter((m) => m.startsWith('Could not publish event worker-heartbeat'))).toHaveLength(2);
    await expect(dispatcher.publish('worker-heartbeat')).rejects.toThrow();
    dispatcher.enabled = false;
    expect(dispatcher.send('worker-heartbeat')).toBeUndefined();
  });
  it('a closed receiver\'s queue is gone for good: a channel opened later does not declare it again', async () => {
    // Gossip closes its heartbeat receiver once it leaves heartbeats to the watchers. A connection that still
    // remembered the queue declared it again on every new channel, racing the broker's auto-delete (RabbitMQ
    // answered the binding with 404 and the new channel, a worker's consumer, failed).
    const broker = memoryBrokerName('events-forget');
    const connection = connect(broker);
    const receiver = new EventReceiver(connection, { routingKey: 'worker.heartbeat' });
    await receiver.start();
    expect(MemoryBroker.named(broker).hasQueue(receiver.queueName)).toBe(true);
    await receiver.close();
    expect(MemoryBroker.named(broker).hasQueue(receiver.queueName)).toBe(false);
    const channel = await connection.createChannel();
    cleanups.push(() => channel.close());
    expect(MemoryBroker.named(broker).hasQueue(receiver.queueName)).toBe(false);
  });
});
