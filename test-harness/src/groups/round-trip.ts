import type { Delivery, OutgoingMessage } from '@kq/core';
import { expect } from 'vitest';
import type { ConformanceContext } from '../conformance-context';
import type { ConformanceGroup } from '../conformance-check';
import { recordingConsumer } from '../delivery-log';
import { seededRandom, testMessage } from '../test-messages';

/** Fails with the first differing offset instead of printing two large buffers. */
export function expectSameBytes(actual: Buffer | undefined, expected: Buffer, what: string): void {
  if (actual === undefined) throw new Error(`${what}: no message arrived`);
  if (!Buffer.isBuffer(actual)) throw new Error(`${what}: body is not a Buffer (${typeof actual})`);
  if (actual.equals(expected)) return;
  let offset = 0;
  while (offset < Math.min(actual.length, expected.length) && actual[offset] === expected[offset]) offset++;
  throw new Error(
    `${what}: body differs — ${actual.length} bytes arrived, ${expected.length} were sent; first difference at offset ${offset} ` +
      `(got ${actual[offset] ?? 'end'}, sent ${expected[offset] ?? 'end'})`,
  );
}

/** Publishes through the default exchange and takes the message back with `get`. */
async function roundTripByGet(context: ConformanceContext, message: OutgoingMessage): Promise<Delivery> {
  const queue = await context.declareQueue('by-get');
  const channel = await context.channel();
  await channel.publish('', queue, message);
  await context.waitForDepth(queue, 1);
  const delivery = await channel.get(queue);
  if (!delivery) throw new Error(`get() returned null although ${queue} held a message`);
  await delivery.ack();
  return delivery;
}

/** Publishes through the default exchange and receives the message with a consumer. */
async function roundTripByConsume(context: ConformanceContext, message: OutgoingMessage): Promise<Delivery> {
  const queue = await context.declareQueue('by-consume');
  const { log } = await recordingConsumer(await context.channel(), [queue], { prefetch: 1 });
  await (await context.channel()).publish('', queue, message);
  await log.waitForCount(context, 1);
  log.assertNoSettleErrors();
  return log.deliveries[0] as Delivery;
}

function allByteValues(): Buffer {
  const ascending = Buffer.from(Array.from({ length: 256 }, (_, value) => value));
  // Both directions, so every byte follows every neighbour class (a NUL after 0xFF, a high byte after ASCII…).
  return Buffer.concat([ascending, Buffer.from(ascending).reverse(), Buffer.from([0, 0, 0xff, 0xfe, 0x0d, 0x0a, 0x1a])]);
}

export async function checkAllByteValues(context: ConformanceContext): Promise<void> {
  const body = allByteValues();
  const message = testMessage(body, { contentType: 'application/octet-stream', contentEncoding: 'binary' });
  const viaGet = await roundTripByGet(context, message);
  expectSameBytes(viaGet.body, body, 'binary body via get');
  expect(viaGet.contentType).toBe('application/octet-stream');
  expect(viaGet.contentEncoding).toBe('binary');
  const viaConsume = await roundTripByConsume(context, message);
  expectSameBytes(viaConsume.body, body, 'binary body via consume');
}

const UNICODE_TEXT = 'héllo wörld — 你好, мир, مرحبا, שלום 🌍🎌👍🏽 𝄞 ∑∫√ e\u0301 \u202eRTL\u202c \u200d tab\tnl\n';

export async function checkUnicode(context: ConformanceContext): Promise<void> {
  const headers = { text: UNICODE_TEXT, emoji: '👩‍👩‍👧‍👦', nested: { cjk: '日本語テキスト' }, list: ['ünï', 'çødé'] };
  const message = testMessage(UNICODE_TEXT, { contentType: 'text/plain', contentEncoding: 'utf-8', headers });
  const delivery = await roundTripByGet(context, message);
  expectSameBytes(delivery.body, Buffer.from(UNICODE_TEXT, 'utf8'), 'unicode body');
  expect(delivery.body.toString('utf8')).toBe(UNICODE_TEXT);
  expect(pick(delivery.headers, Object.keys(headers))).toEqual(headers);
}

export async function checkEmptyBody(context: ConformanceContext): Promise<void> {
  const message = testMessage(Buffer.alloc(0), { contentType: 'application/octet-stream', contentEncoding: 'binary' });
  const viaGet = await roundTripByGet(context, message);
  expectSameBytes(viaGet.body, Buffer.alloc(0), 'empty body via get');
  const viaConsume = await roundTripByConsume(context, message);
  expectSameBytes(viaConsume.body, Buffer.alloc(0), 'empty body via consume');
}

export async function checkOneMebibyte(context: ConformanceContext): Promise<void> {
  const random = seededRandom(0x1d1b);
  const body = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < body.length; i++) body[i] = Math.floor(random() * 256);
  const message = testMessage(body, { contentType: 'application/octet-stream', contentEncoding: 'binary' });
  const viaConsume = await roundTripByConsume(context, message);
  expectSameBytes(viaConsume.body, body, '1 MiB body via consume');
  const viaGet = await roundTripByGet(context, message);
  expectSameBytes(viaGet.body, body, '1 MiB body via get');
}

export function pick(record: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((key) => key in record).map((key) => [key, record[key]]));
}

export const roundTripGroup: ConformanceGroup = {
  name: 'byte-exact round trips',
  checks: [
    { name: 'binary bodies with all 256 byte values arrive unchanged', run: checkAllByteValues },
    { name: 'unicode in body and header values arrives unchanged', run: checkUnicode },
    { name: 'an empty body stays empty', run: checkEmptyBody },
    { name: 'a 1 MiB body arrives unchanged', run: checkOneMebibyte },
  ],
};
