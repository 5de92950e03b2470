// A queue can vanish between its declaration and its binding (RabbitMQ auto-deletes a queue whose last consumer
// left, or expires it): declaring it again is the cure, not failing whatever opened the channel.
import { describe, expect, it } from 'vitest';
import { declareEntity } from '../src/connection';
import { QueueNotFound } from '../src/errors';
import { Queue } from '../src/queue';
import type { Channel } from '../src/transport';

/** A channel whose declareQueue fails `failures` times with the given error, then succeeds. */
function flakyChannel(failures: number, error: (name: string) => Error): { channel: Channel; calls: string[] } {
  const calls: string[] = [];
  let left = failures;
  const channel = {
    declareQueue: (queue: Queue) => {
      calls.push(queue.name);
      if (left-- > 0) return Promise.reject(error(queue.name));
      return Promise.resolve({ queue: queue.name, messageCount: 0, consumerCount: 0 });
    },
  } as unknown as Channel;
  return { channel, calls };
}

describe('declareEntity', () => {
  it('declares and binds a queue again when it vanished before it was bound', async () => {
    const { channel, calls } = flakyChannel(1, (name) => new QueueNotFound(name));
    await declareEntity(channel, new Queue('celeryev.gone', { exchange: 'celeryev', routingKey: 'worker.#' }));
    expect(calls).toEqual(['celeryev.gone', 'celeryev.gone']);
  });

  it('tries once more only: a queue that keeps vanishing fails with QueueNotFound', async () => {
    const { channel, calls } = flakyChannel(2, (name) => new QueueNotFound(name));
    await expect(declareEntity(channel, new Queue('celeryev.gone'))).rejects.toBeInstanceOf(QueueNotFound);
    expect(calls).toHaveLength(2);
  });

  it('does not retry any other failure', async () => {
    const { channel, calls } = flakyChannel(1, () => new Error('PRECONDITION_FAILED'));
    await expect(declareEntity(channel, new Queue('q'))).rejects.toThrow('PRECONDITION_FAILED');
    expect(calls).toHaveLength(1);
  });
});
