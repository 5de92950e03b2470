// AckCoalescer: acks of one turn go out as few frames as possible, and a `multiple` ack never covers a delivery
// the application has not settled (checked against a model of the broker's unacked set).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AckCoalescer } from '../src/ack-coalescer';
import type { AmqplibChannel, AmqplibConsumeMessage } from '../src/amqplib-loader';

interface Frame {
  kind: 'ack' | 'reject';
  tag: number;
  multiple: boolean;
  requeue?: boolean;
}

function fakeChannel(): { channel: AmqplibChannel; frames: Frame[] } {
  const frames: Frame[] = [];
  const channel = {
    ack: (message: AmqplibConsumeMessage, allUpTo = false) => frames.push({ kind: 'ack', tag: message.fields.deliveryTag, multiple: allUpTo }),
    reject: (message: AmqplibConsumeMessage, requeue = true) => frames.push({ kind: 'reject', tag: message.fields.deliveryTag, multiple: false, requeue }),
  } as unknown as AmqplibChannel;
  return { channel, frames };
}

function delivery(tag: number): AmqplibConsumeMessage {
  return { fields: { deliveryTag: tag }, properties: {}, content: Buffer.alloc(0) } as unknown as AmqplibConsumeMessage;
}

describe('AckCoalescer', () => {
  it('sends the acks of one turn for deliveries in a row as one multiple ack', () => {
    const { channel, frames } = fakeChannel();
    const acks = new AckCoalescer(channel);
    const messages = [1, 2, 3, 4].map(delivery);
    for (const message of messages) acks.received(message);
    for (const message of messages.slice(0, 3)) acks.ack(message);
    expect(frames).toEqual([]);
    acks.flush();
    expect(frames).toEqual([{ kind: 'ack', tag: 3, multiple: true }]);
  });

  it("an ack's promise settles once its frame is handed to the channel, one promise for the turn", async () => {
    const { channel, frames } = fakeChannel();
    const acks = new AckCoalescer(channel);
    const messages = [1, 2].map(delivery);
    for (const message of messages) acks.received(message);
    let settled = 0;
    const first = acks.ack(messages[0] as AmqplibConsumeMessage).then(() => settled++);
    const second = acks.ack(messages[1] as AmqplibConsumeMessage).then(() => settled++);
    await Promise.resolve();
    expect(settled).toBe(0);
    expect(frames).toEqual([]);
    await Promise.all([first, second]);
    expect(frames).toEqual([{ kind: 'ack', tag: 2, multiple: true }]);
  });

  it('acks behind an open delivery go out one by one, not held back by it', () => {
    const { channel, frames } = fakeChannel();
    const acks = new AckCoalescer(channel);
    const messages = [1, 2, 3].map(delivery);
    for (const message of messages) acks.received(message);
    acks.ack(messages[1] as AmqplibConsumeMessage);
    acks.ack(messages[2] as AmqplibConsumeMessage);
    acks.flush();
    expect(frames).toEqual([
      { kind: 'ack', tag: 2, multiple: false },
      { kind: 'ack', tag: 3, multiple: false },
    ]);
    acks.ack(messages[0] as AmqplibConsumeMessage);
    acks.flush();
    expect(frames.at(-1)).toEqual({ kind: 'ack', tag: 1, multiple: true });
  });

  it('rejects at once, and a reject does not end a run', () => {
    const { channel, frames } = fakeChannel();
    const acks = new AckCoalescer(channel);
    const messages = [1, 2, 3].map(delivery);
    for (const message of messages) acks.received(message);
    acks.ack(messages[0] as AmqplibConsumeMessage);
    acks.reject(messages[1] as AmqplibConsumeMessage, true);
    expect(frames).toEqual([{ kind: 'reject', tag: 2, multiple: false, requeue: true }]);
    acks.ack(messages[2] as AmqplibConsumeMessage);
    acks.flush();
    expect(frames.at(-1)).toEqual({ kind: 'ack', tag: 3, multiple: true });
  });

  it('refuses a second settle of the same delivery', () => {
    const { channel } = fakeChannel();
    const acks = new AckCoalescer(channel);
    const message = delivery(1);
    acks.received(message);
    acks.ack(message);
    expect(() => acks.ack(message)).toThrow(/not open/);
    expect(() => acks.reject(message, false)).toThrow(/not open/);
  });

  it('never acks an unsettled delivery, and acks every acked one exactly once (fast-check, against a broker model)', () => {
    const operation = fc.oneof(
      fc.record({ op: fc.constant('receive' as const) }),
      fc.record({ op: fc.constantFrom('ack' as const, 'reject' as const), pick: fc.nat() }),
      fc.record({ op: fc.constant('flush' as const) }),
    );
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 120 }), (operations) => {
        const { channel, frames } = fakeChannel();
        const acks = new AckCoalescer(channel);
        const open: AmqplibConsumeMessage[] = [];
        const acked = new Set<number>();
        let nextTag = 1;
        for (const step of operations) {
          if (step.op === 'receive') {
            const message = delivery(nextTag++);
            acks.received(message);
            open.push(message);
          } else if (step.op === 'flush') {
            acks.flush();
          } else if (open.length > 0) {
            const [message] = open.splice(step.pick % open.length, 1) as [AmqplibConsumeMessage];
            if (step.op === 'ack') {
              acks.ack(message);
              acked.add(message.fields.deliveryTag);
            } else {
              acks.reject(message, false);
            }
          }
        }
        acks.flush();
        // Replay the frames on the broker's view: every delivery unacked until a frame settles it.
        const unacked = new Set<number>(Array.from({ length: nextTag - 1 }, (_, index) => index + 1));
        const ackedByBroker = new Set<number>();
        for (const frame of frames) {
          expect(unacked.has(frame.tag)).toBe(true); // RabbitMQ closes the channel on an unknown tag
          const covered = frame.multiple ? [...unacked].filter((tag) => tag <= frame.tag) : [frame.tag];
          for (const tag of covered) {
            unacked.delete(tag);
            if (frame.kind === 'ack') ackedByBroker.add(tag);
          }
        }
        expect([...ackedByBroker].sort((a, b) => a - b)).toEqual([...acked].sort((a, b) => a - b));
        for (const message of open) expect(unacked.has(message.fields.deliveryTag)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
