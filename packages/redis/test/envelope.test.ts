import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { priorityStep, type StoredMessage } from '@kq/core';
import { describe, expect, it } from 'vitest';
import { MalformedEnvelope, decodeEnvelope, encodeEnvelope, envelopePriority, markRedelivered } from '@kq/core';
import { DEFAULT_KEY_NAMES, KOMBU_SEP, KeyLayout } from '../src/key-layout';
import { pyJson } from '@kq/core';
import { capture, loadCaptures } from './helpers/monitor';

const PYTHON = '/usr/bin/python3';

function layout(prefix = '', db = 13): KeyLayout {
  return new KeyLayout({ prefix, sep: KOMBU_SEP, steps: [0, 3, 6, 9], fanoutPrefix: `/${db}.`, fanoutPatterns: true, names: DEFAULT_KEY_NAMES });
}

/** The envelope argument of a captured command (LPUSH/RPUSH key env, PUBLISH channel env, HSET hash tag value). */
function envelopeOf(source: string): string {
  const { command, args } = capture(source);
  return (command === 'HSET' ? args[2] : args[1]) as string;
}

describe('Kombu envelope: golden bytes from captured Python traffic', () => {
  const messages = loadCaptures().filter((entry) => entry.command !== 'HSET');

  it.each(messages.map((entry) => [entry.source, entry] as const))('%s decodes and re-encodes byte for byte', (_source, entry) => {
    const raw = entry.args[1] as string;
    const queue = entry.command === 'PUBLISH' ? '' : layout().parseListKey(entry.args[0] as string).queue;
    const message = decodeEnvelope(raw, { queue });
    expect(encodeEnvelope(message)).toBe(raw);
  });

  it("builds Celery's add.delay(2, 2) message from kq values exactly as Kombu wrote it", () => {
    const raw = envelopeOf('redis-5.2.6-basic.monitor.txt:12');
    const id = '2de288c0-2ebf-495f-b311-1a1ba1cbe240';
    const message: StoredMessage = {
      body: Buffer.from('[[2, 2], {}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]'),
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      headers: {
        lang: 'py',
        task: 'proj.add',
        id,
        shadow: null,
        eta: null,
        expires: null,
        group: null,
        group_index: null,
        retries: 0,
        timelimit: [null, null],
        root_id: id,
        parent_id: null,
        argsrepr: '(2, 2)',
        kwargsrepr: '{}',
        origin: 'gen7075@vm',
        ignore_result: false,
      },
      properties: { correlationId: id, replyTo: 'b28c3123-609e-340d-a788-7a3a6a5cf19a', deliveryMode: 2, priority: 0 },
      exchange: '',
      routingKey: 'celery',
      deliveryTag: '01ef6a61-da5e-4d10-a16c-c46d3968d1ef',
      redelivered: false,
    };
    expect(encodeEnvelope(message)).toBe(raw);
  });

  it('decodes properties to kq names and the body from base64', () => {
    const message = decodeEnvelope(envelopeOf('redis-5.2.6-basic.monitor.txt:14'), { queue: 'celery' });
    expect(message.body.toString()).toBe('[[3, 4], {}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]');
    expect(message.properties).toEqual({
      correlationId: '4f899d18-f559-4fc6-a81a-8471efa42624',
      replyTo: 'b28c3123-609e-340d-a788-7a3a6a5cf19a',
      deliveryMode: 2,
      expiration: '600000',
      priority: 5,
    });
    expect(message).toMatchObject({ exchange: '', routingKey: 'celery', deliveryTag: 'eb25189a-cb17-4c71-a4c7-79b26e9ccc5c', redelivered: false });
    expect(message.headers['eta']).toBe('2026-11-21T13:12:05.748339+00:00');
  });

  it('restores exactly as Kombu did: the captured RPUSH is the captured HSET envelope marked redelivered', () => {
    const unacked = envelopeOf('redis-5.2.6-basic.monitor.txt:93');
    const envelope = unacked.slice(1, unacked.lastIndexOf(', "", "celery"]'));
    expect(`[${envelope}, "", "celery"]`).toBe(unacked);
    const restored = markRedelivered(envelope);
    expect(restored).toBe(envelopeOf('redis-5.2.6-basic.monitor.txt:277'));
    expect(decodeEnvelope(restored, { queue: 'celery' }).redelivered).toBe(true);
    // A second restore changes nothing more.
    expect(markRedelivered(restored)).toBe(restored);
  });

  it('keeps number literals and key order when marking redelivered', () => {
    const raw = '{"body": "eA==", "headers": {"a": 2.0, "big": 12345678901234567890, "n": NaN}, "properties": {"x": 1E5, "delivery_info": {"exchange": "e", "routing_key": "r"}, "delivery_tag": "t"}}';
    expect(markRedelivered(raw)).toBe(
      '{"body": "eA==", "headers": {"a": 2.0, "big": 12345678901234567890, "n": NaN, "redelivered": true}, "properties": {"x": 1E5, "delivery_info": {"exchange": "e", "routing_key": "r", "redelivered": true}, "delivery_tag": "t"}}',
    );
    expect(markRedelivered('not json')).toBe('not json');
  });

  it('reads priority 5 from the envelope and files it under the step-3 key, as Kombu does', () => {
    const raw = envelopeOf('redis-5.2.6-basic.monitor.txt:14');
    expect(envelopePriority(raw)).toBe(5);
    expect(layout().listKey('celery', priorityStep(5))).toBe(capture('redis-5.2.6-basic.monitor.txt:14').args[0]);
    expect(layout().listKey('celery', priorityStep(envelopePriority(envelopeOf('redis-5.6.3-basic.monitor.txt:12'))))).toBe(
      'celery\x06\x163',
    );
  });
});

describe('Kombu key and channel naming', () => {
  it('lists and binding members', () => {
    const keys = layout();
    expect(keys.queueKeys('celery')).toEqual(['celery', 'celery\x06\x163', 'celery\x06\x166', 'celery\x06\x169']);
    expect(keys.consumeKeys(['qa', 'qb']).keys).toEqual([
      'qa',
      'qb',
      'qa\x06\x163',
      'qb\x06\x163',
      'qa\x06\x166',
      'qb\x06\x166',
      'qa\x06\x169',
      'qb\x06\x169',
    ]);
    expect(keys.bindingKey('celery')).toBe('_kombu.binding.celery');
    expect(keys.bindingMember({ routingKey: 'celery', pattern: '', queue: 'celery' })).toBe('celery\x06\x16\x06\x16celery');
    expect(keys.bindingMember({ routingKey: '', pattern: '', queue: 'w1@probe.celery.pidbox' })).toBe('\x06\x16\x06\x16w1@probe.celery.pidbox');
    expect(keys.parseBindingMember('worker.#\x06\x16\x06\x16celeryev.b0654823')).toEqual({
      routingKey: 'worker.#',
      pattern: '',
      queue: 'celeryev.b0654823',
    });
    expect(keys.parseListKey('celery\x06\x166')).toEqual({ queue: 'celery', step: 6 });
    expect(keys.key('unacked')).toBe('unacked');
    expect(keys.key('unackedIndex')).toBe('unacked_index');
    expect(keys.key('unackedMutex')).toBe('unacked_mutex');
  });

  it('fanout channels and subscription patterns', () => {
    const keys = layout();
    expect(keys.publishChannel('celery.pidbox', '')).toBe(capture('redis-5.2.6-basic.monitor.txt:40').args[0]);
    expect(keys.publishChannel('celeryev', 'worker.online')).toBe(capture('redis-5.2.6-basic.monitor.txt:81').args[0]);
    expect(keys.subscribePattern('celery.pidbox', '')).toBe('/13.celery.pidbox');
    expect(keys.subscribePattern('celeryev', 'worker.#')).toBe('/13.celeryev/worker.*');
    expect(keys.subscribePattern('celeryev', '#')).toBe('/13.celeryev/*');
    const noPatterns = new KeyLayout({ prefix: '', sep: KOMBU_SEP, steps: [0], fanoutPrefix: '', fanoutPatterns: false, names: DEFAULT_KEY_NAMES });
    expect(noPatterns.publishChannel('celeryev', 'worker.online')).toBe('celeryev');
  });

  it('global_keyprefix applies to keys and channels as in the capture', () => {
    const keys = layout('pfx:');
    expect(keys.listKey('celery', 0)).toBe(capture('redis-5.2.6-global-keyprefix.monitor.txt:84').args[0]);
    expect(keys.publishChannel('celery.pidbox', '')).toBe(capture('redis-5.2.6-global-keyprefix.monitor.txt:21').args[0]);
    expect(keys.publishChannel('celeryev', 'worker.online')).toBe(capture('redis-5.2.6-global-keyprefix.monitor.txt:64').args[0]);
    expect(keys.subscribePattern('celeryev', 'worker.#')).toBe('pfx:/13.celeryev/worker.*');
    expect(keys.key('unacked')).toBe('pfx:unacked');
    expect(keys.bindingKey('celery')).toBe('pfx:_kombu.binding.celery');
    expect(keys.parseListKey('pfx:celery\x06\x169')).toEqual({ queue: 'celery', step: 9 });
  });
});

describe('tolerant decoding', () => {
  const base = { 'content-type': 'application/json', 'content-encoding': 'utf-8', headers: {} };

  it('takes the body verbatim without body_encoding and ignores unknown properties', () => {
    const raw = JSON.stringify({ ...base, body: '[[1],{},null]', properties: { delivery_tag: 't', surprise: { x: 1 }, delivery_mode: 1 } });
    const message = decodeEnvelope(raw, { queue: 'q' });
    expect(message.body.toString()).toBe('[[1],{},null]');
    expect(message.properties).toEqual({ deliveryMode: 1 });
    expect(message).toMatchObject({ exchange: '', routingKey: 'q', redelivered: false });
  });

  it('reads redelivered from headers or delivery_info', () => {
    const viaHeaders = JSON.stringify({ ...base, body: '', headers: { redelivered: true }, properties: { delivery_tag: 't' } });
    const viaInfo = JSON.stringify({ ...base, body: '', properties: { delivery_tag: 't', delivery_info: { exchange: 'x', routing_key: 'k', redelivered: true } } });
    expect(decodeEnvelope(viaHeaders, { queue: 'q' }).redelivered).toBe(true);
    expect(decodeEnvelope(viaInfo, { queue: 'q' })).toMatchObject({ redelivered: true, exchange: 'x', routingKey: 'k' });
  });

  it("accepts Python's NaN and Infinity", () => {
    const raw = '{"body": "", "headers": {"x": NaN, "y": -Infinity}, "properties": {"delivery_tag": "t"}}';
    const message = decodeEnvelope(raw, { queue: 'q' });
    expect(Number.isNaN(message.headers['x'])).toBe(true);
    expect(message.headers['y']).toBe(-Infinity);
  });

  it.each([
    ['not json', 'the envelope is not JSON'],
    ['[1, 2]', 'not a JSON object'],
    ['{"body": "x"}', 'no properties object'],
    ['{"body": "x", "properties": {}}', 'delivery_tag'],
    ['{"body": {"a": 1}, "properties": {"delivery_tag": "t"}}', 'body is a object'],
  ])('refuses %s', (raw, reason) => {
    expect(() => decodeEnvelope(raw, { queue: 'q' })).toThrow(MalformedEnvelope);
    expect(() => decodeEnvelope(raw, { queue: 'q' })).toThrow(reason);
  });
});

describe.skipIf(!existsSync(PYTHON))("pyJson writes what Python's json.dumps writes", () => {
  it('for strings, numbers and nesting', () => {
    const value = {
      s: 'caf\u00e9 \u2603 \ud83d\ude00 "q" \\ \n\t\u0001\u007f/',
      n: [0, -1, 1.5, 1795266701.4704223, 123456789012],
      b: [true, false, null],
      nested: { '': {}, list: [] },
    };
    const python = execFileSync(PYTHON, ['-c', 'import json,sys; print(json.dumps(json.loads(sys.stdin.read())), end="")'], {
      input: JSON.stringify(value),
    }).toString();
    expect(pyJson(value)).toBe(python);
  });
});

describe('pyJson', () => {
  // An independent model: JSON.stringify's own output re-spaced (its newlines are all structure) and made ASCII.
  const model = (value: unknown): string =>
    (JSON.stringify(value, null, 1) ?? 'null')
      .replace(/,\n */g, ', ')
      .replace(/\n */g, '')
      .replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);

  it('agrees with JSON.stringify re-spaced the Python way, for any JSON value (fast-check)', () => {
    const value = fc.oneof(fc.jsonValue(), fc.jsonValue({ stringUnit: 'binary' }), fc.jsonValue({ stringUnit: 'grapheme' }));
    fc.assert(
      fc.property(value, (json) => {
        expect(pyJson(json)).toBe(model(json));
      }),
      { numRuns: 500 },
    );
  });

  it('leaves out undefined members, writes non-finite numbers as null, and goes through toJSON', () => {
    expect(pyJson({ a: undefined, b: [undefined, NaN, Infinity], c: new Date(0), d: new Number(2) })).toBe(
      '{"b": [null, null, null], "c": "1970-01-01T00:00:00.000Z", "d": 2}',
    );
  });
});
