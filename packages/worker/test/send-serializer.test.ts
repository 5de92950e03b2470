/**
 * A serializer named by one call only (`serializer: 'yaml'`), not by the app's configuration, is loaded on first use
 * as the configuration's are. Its own file: the shared registry must not have yaml from another test's app.
 */
import { defaultSerializers, MemoryBroker, SerializerNotRegistered } from '@kq/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { decodeTaskMessage } from '../src/protocol/index';

let seq = 0;

describe('a per-call serializer', () => {
  let app: App;

  beforeEach(() => {
    const broker = `send-serializer-${++seq}`;
    MemoryBroker.reset(broker);
    app = new App('client', { broker: `memory://${broker}` });
  });

  afterEach(async () => {
    await app.close();
  });

  const drain = async (): Promise<Array<{ contentType: string; args: unknown[] }>> => {
    const channel = await app.connection.channel();
    const found = [];
    for (let delivery = await channel.get('celery'); delivery; delivery = await channel.get('celery')) {
      found.push({ contentType: delivery.contentType, args: decodeTaskMessage(delivery).args });
      await delivery.ack();
    }
    return found;
  };

  it("yaml, named by sendTask, applyAsync and sendTasks alone, is loaded and used (Celery's acceptContent not needed)", async () => {
    expect(defaultSerializers.has('yaml')).toBe(false);
    await app.sendTask('py.echo', ['a'], {}, { serializer: 'yaml' });
    await app.signature('py.echo', ['b']).applyAsync([], {}, { serializer: 'yaml' });
    await app.sendTasks([{ name: 'py.echo', args: ['c'], options: { serializer: 'yaml' } }]);
    expect(await drain()).toEqual([
      { contentType: 'application/x-yaml', args: ['a'] },
      { contentType: 'application/x-yaml', args: ['b'] },
      { contentType: 'application/x-yaml', args: ['c'] },
    ]);
  });

  it('pickle is refused with a SerializerNotRegistered that says kq cannot do pickle', async () => {
    const error = await app.sendTask('py.echo', [], {}, { serializer: 'pickle' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SerializerNotRegistered);
    expect((error as Error).message).toMatch(/kq cannot encode or decode pickle.*use json, msgpack or yaml/);
  });
});
