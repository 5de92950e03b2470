import { describe, expect, it } from 'vitest';
import { MemoryBroker, MemoryStore, VirtualTransport, type StoredMessage, type TransportDescription } from '../src/index';

/** A memory store that notes each push as it is made. */
class NotingStore extends MemoryStore {
  readonly pushed: string[] = [];

  override push(queue: string, message: StoredMessage, priority: number): Promise<void> {
    this.pushed.push(queue);
    return super.push(queue, message, priority);
  }
}

class NotingTransport extends VirtualTransport {
  readonly name = 'noting';
  readonly notes: NotingStore;

  constructor() {
    const store = new NotingStore(new MemoryBroker(`noting-${Math.random()}`));
    super(store, { pollIntervalMs: 20 });
    this.notes = store;
  }

  describe(): TransportDescription {
    return { transport: 'memory', hostname: 'noting', port: null, virtualHost: null, userid: null, ssl: false };
  }
}

const message = { body: Buffer.from('x'), contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, properties: {} };

describe('VirtualChannel.publish', () => {
  it('hands a message for the default exchange to the store before it returns: nothing to route, no turn waited', async () => {
    const transport = new NotingTransport();
    const channel = await transport.createChannel();
    const published = channel.publish('', 'tasks', message);
    expect(transport.notes.pushed).toEqual(['tasks']);
    await published;
    await channel.close();
    await transport.close();
  });

  it('still rejects (never throws) when the channel is closed', async () => {
    const transport = new NotingTransport();
    const channel = await transport.createChannel();
    await channel.close();
    let published: Promise<void> | undefined;
    expect(() => (published = channel.publish('', 'tasks', message))).not.toThrow();
    await expect(published).rejects.toThrow();
    expect(transport.notes.pushed).toEqual([]);
    await transport.close();
  });
});
