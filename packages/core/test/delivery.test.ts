import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContentDisallowed, ExchangeNotFound, MessageStateError } from '../src/errors';
import { Exchange } from '../src/exchange';
import { MemoryBroker } from '../src/memory/memory-broker';
import { MemoryTransport } from '../src/memory/memory-transport';
import type { OutgoingMessage } from '../src/message';
import { Queue } from '../src/queue';
import type { Channel } from '../src/transport';

const message = (text: string, contentType = 'application/json'): OutgoingMessage => ({
  body: Buffer.from(text),
  contentType,
  contentEncoding: 'utf-8',
  headers: {},
  properties: {},
});

describe('typed errors that lose nothing', () => {
  let transport: MemoryTransport;
  let channel: Channel;

  beforeEach(async () => {
    MemoryBroker.reset('delivery-test');
    transport = new MemoryTransport({ broker: 'delivery-test' });
    channel = await transport.createChannel();
    await channel.declareQueue(new Queue('q'));
  });
  afterEach(() => transport.close());

  it('refuses a publish to an undeclared exchange and delivers nothing anywhere', async () => {
    const error = await channel.publish('nowhere', 'q', message('"x"')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExchangeNotFound);
    expect((error as Error).message).toMatch(/declare it first/i);
    expect((await channel.checkQueue('q')).messageCount).toBe(0);
  });

  it('refuses a second ack, and the first one stands', async () => {
    await channel.publish('', 'q', message('"x"'));
    const delivery = await channel.get('q');
    expect(delivery).not.toBeNull();
    await delivery!.ack();
    await expect(delivery!.ack()).rejects.toBeInstanceOf(MessageStateError);
    await expect(delivery!.requeue()).rejects.toBeInstanceOf(MessageStateError);
    expect((await channel.checkQueue('q')).messageCount).toBe(0);
  });

  it('refuses to decode disallowed content, and the message can still be requeued', async () => {
    await channel.publish('', 'q', message('<xml/>', 'application/xml'));
    const delivery = (await channel.get('q'))!;
    expect(() => delivery.decode({ accept: ['json'] })).toThrow(ContentDisallowed);
    await delivery.requeue();
    const again = (await channel.get('q'))!;
    expect(again.deliveryInfo.redelivered).toBe(true);
    expect(again.body.toString()).toBe('<xml/>');
    await again.ack();
  });

  it('keeps a rejected message when its dead-letter exchange is missing', async () => {
    await channel.declareQueue(new Queue('dl-src', { deadLetterExchange: 'never-declared' }));
    await channel.publish('', 'dl-src', message('"precious"'));
    const delivery = (await channel.get('dl-src'))!;
    await expect(delivery.reject()).rejects.toBeInstanceOf(ExchangeNotFound);
    const again = (await channel.get('dl-src'))!;
    expect(again.body.toString()).toBe('"precious"');
    await again.ack();
  });

  it('restores unsettled deliveries when the channel closes', async () => {
    await channel.declareExchange(new Exchange('ex', { type: 'direct' }));
    await channel.bindQueue('q', 'ex', 'k');
    await channel.publish('ex', 'k', message('1'));
    await channel.publish('ex', 'k', message('2'));
    expect((await channel.get('q'))?.body.toString()).toBe('1');
    expect((await channel.get('q'))?.body.toString()).toBe('2');
    await channel.close();
    const other = await transport.createChannel();
    const first = (await other.get('q'))!;
    const second = (await other.get('q'))!;
    expect([first.body.toString(), second.body.toString()]).toEqual(['1', '2']);
    expect(first.deliveryInfo.redelivered).toBe(true);
  });
});
