// The publisher after a basic.nack, on fake amqplib channels and fake timers: it replaces the nacked channel on a
// backoff (50 ms, doubling while new channels are nacked too, up to 1 s, back to 50 ms after a confirm), and the
// refusal says why the broker refused, as far as the declared queues tell.
import { EventEmitter } from 'node:events';
import { PublishRejected, Queue } from '@kq/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ConnectionSupervisor } from '../src/connection-supervisor';
import { Publisher, type PublishRequest } from '../src/publisher';

type ConfirmCallback = (error: unknown) => void;

/** An amqplib confirm channel that records publishes and lets the test ack or nack them. */
class FakeConfirmChannel extends EventEmitter {
  readonly unconfirmed: ConfirmCallback[] = [];
  closed = false;

  publish(_exchange: string, _routingKey: string, _content: Buffer, _options: unknown, callback: ConfirmCallback): boolean {
    this.unconfirmed.push(callback);
    return true;
  }

  ack(): void {
    this.unconfirmed.shift()?.(null);
  }

  nack(): void {
    this.unconfirmed.shift()?.(new Error('message nacked'));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // As amqplib does: what was unconfirmed fails with 'channel closed', then the channel emits 'close'.
    for (const callback of this.unconfirmed.splice(0)) callback(new Error('channel closed'));
    this.emit('close');
  }
}

function fakeBroker(): { supervisor: ConnectionSupervisor; channels: FakeConfirmChannel[] } {
  const channels: FakeConfirmChannel[] = [];
  const connection = {
    createConfirmChannel: async () => {
      const channel = new FakeConfirmChannel();
      channels.push(channel);
      return channel;
    },
  };
  return { supervisor: { connection: async () => connection } as unknown as ConnectionSupervisor, channels };
}

function request(routingKey = 'tasks'): PublishRequest {
  return { exchange: '', routingKey, content: Buffer.from('body'), options: {}, mandatory: false, target: { exchange: '', routingKey } };
}

function newPublisher(supervisor: ConnectionSupervisor, routedQueues?: () => readonly Queue[]): Publisher {
  return new Publisher(supervisor, { confirms: true, recoveryTimeout: 60_000, closeTimeout: 1000, onError: () => undefined, routedQueues });
}

/** The error a publish is refused with (a publish that succeeds fails the test). */
function refusal(publish: Promise<void>): Promise<Error> {
  return publish.then(
    () => {
      throw new Error('the publish was confirmed; a refusal was expected');
    },
    (error: unknown) => error as Error,
  );
}

/** Lets the publisher's promise chains (channel opening, the pump) run, without moving the clock. */
async function settle(): Promise<void> {
  await vi.advanceTimersByTimeAsync(0);
}

describe('publisher: replacing a channel after basic.nack', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Publishes one message on the live channel, nacks it, and returns how long (fake ms) until that channel closes. */
  async function nackAndTimeReplacement(publisher: Publisher, channels: FakeConfirmChannel[]): Promise<number> {
    const refused = refusal(publisher.publish(request()));
    await settle();
    const channel = channels.at(-1)!;
    expect(channel.closed).toBe(false);
    channel.nack();
    expect(await refused).toBeInstanceOf(PublishRejected);
    let waited = 0;
    while (!channel.closed && waited < 5000) {
      await vi.advanceTimersByTimeAsync(1);
      waited++;
    }
    return waited;
  }

  it('waits 50 ms, doubling to 1 s while each new channel is nacked too, and starts again at 50 ms after a confirm', async () => {
    const { supervisor, channels } = fakeBroker();
    const publisher = newPublisher(supervisor);
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) waits.push(await nackAndTimeReplacement(publisher, channels));
    // The old policy (at most one replacement a second) gave [0, 1000, 1000, …]: a second of refusals per try.
    expect(waits).toEqual([50, 100, 200, 400, 800, 1000, 1000]);
    expect(channels).toHaveLength(7);

    // A publish confirmed on the new channel shows the replacement helped: the next nack waits 50 ms again.
    const accepted = publisher.publish(request());
    await settle();
    channels.at(-1)!.ack();
    await accepted;
    expect(await nackAndTimeReplacement(publisher, channels)).toBe(50);
  });

  it('replaces a channel once however many of its publishes are nacked; publishes wait for the new channel', async () => {
    const { supervisor, channels } = fakeBroker();
    const publisher = newPublisher(supervisor);
    const outcome = (publish: Promise<void>): Promise<string> => publish.then(() => 'confirmed', (error: unknown) => (error as Error).name);
    const outcomes = [1, 2, 3, 4, 5].map(() => outcome(publisher.publish(request())));
    await settle();
    const [first] = channels;
    expect(first!.unconfirmed).toHaveLength(5);
    first!.nack();
    first!.nack();
    first!.nack();
    // In flight on the retired channel: its confirm still counts.
    first!.ack();
    // Made while the channel waits to be replaced: not sent on it (it would be sent twice, or refused).
    outcomes.push(outcome(publisher.publish(request())));
    await settle();
    expect(first!.unconfirmed).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(50);
    expect(first!.closed).toBe(true);
    // The fifth, unconfirmed when its channel closed, goes out again on the next one, before the sixth.
    await settle();
    expect(channels).toHaveLength(2);
    expect(channels[1]!.unconfirmed).toHaveLength(2);
    channels[1]!.ack();
    channels[1]!.ack();
    expect(await Promise.all(outcomes)).toEqual(['PublishRejected', 'PublishRejected', 'PublishRejected', 'confirmed', 'confirmed', 'confirmed']);
    // The three nacks of the first channel retired it once: nothing more is replaced.
    await vi.advanceTimersByTimeAsync(5000);
    expect(channels[1]!.closed).toBe(false);
    expect(channels).toHaveLength(2);
  });

  it('says a quorum queue has no leader yet, and blames x-overflow only for a queue declared with it', async () => {
    const { supervisor, channels } = fakeBroker();
    let routed: Queue[] = [new Queue('tasks', { queueType: 'quorum' })];
    const publisher = newPublisher(supervisor, () => routed);

    const leaderless = refusal(publisher.publish(request()));
    await settle();
    channels[0]!.nack();
    const leaderlessError = await leaderless;
    expect(leaderlessError).toBeInstanceOf(PublishRejected);
    expect(leaderlessError.message).toMatch(/queue "tasks" has no leader yet/);
    expect(leaderlessError.message).toMatch(/succeed once a new leader is elected/);
    expect(leaderlessError.message).not.toMatch(/x-overflow/);

    routed = [new Queue('tasks', { maxLength: 10, arguments: { 'x-overflow': 'reject-publish' } })];
    await vi.advanceTimersByTimeAsync(50);
    const full = refusal(publisher.publish(request()));
    await settle();
    channels.at(-1)!.nack();
    const fullError = await full;
    expect(fullError.message).toMatch(/queue "tasks" is full \(x-overflow=reject-publish\)/);
    expect(fullError.message).not.toMatch(/leader/);
  });
});
