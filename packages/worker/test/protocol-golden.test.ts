// Golden tests: messages captured from Python Celery 5.2.6/5.6.3 decode as expected, and our encoder produces the
// header set, header order and body layout Celery produces for the same inputs.
import { describe, expect, it } from 'vitest';
import { defaultSerializers, subMillisecondMicros } from '@kq/core';
import {
  CELERY_52_HEADER_KEYS,
  CELERY_53_HEADER_KEYS,
  decodeTaskMessage,
  encodeTaskMessage,
  formatIsoDate,
  parseIsoDate,
  type SignatureJson,
  type TaskMessage,
} from '../src/protocol/index';
import {
  loadAmqpCapture,
  loadCeleryEncodedCases,
  loadDecodedCapture,
  loadMonitorCapture,
  pythonJsonDumps,
  type CapturedMessage,
} from './fixtures/protocol/captures';

const redis526 = loadMonitorCapture('redis-5.2.6-basic.monitor.txt');
const redis563 = loadMonitorCapture('redis-5.6.3-basic.monitor.txt');
const retryChain = loadDecodedCapture('redis-5.2.6-retry-chain.decoded.txt');
const amqp = loadAmqpCapture();
const allCaptured: CapturedMessage[] = [...redis526, ...redis563, ...retryChain, amqp];

const decode = (message: CapturedMessage): TaskMessage => decodeTaskMessage(message, { accept: ['json'] });

const sig = (task: string, args: unknown[], options: Record<string, unknown> = {}): SignatureJson => ({
  task,
  args,
  kwargs: {},
  options,
  subtask_type: null,
  immutable: false,
});

describe('decoding captured Python messages', () => {
  it('loads every capture', () => {
    expect(redis526).toHaveLength(3);
    expect(redis563).toHaveLength(2);
    expect(retryChain).toHaveLength(10);
  });

  it('decodes add.delay(2,2) from Celery 5.2.6 on Redis, field by field', () => {
    expect(decode(redis526[0]!)).toEqual({
      id: '2de288c0-2ebf-495f-b311-1a1ba1cbe240',
      name: 'proj.add',
      args: [2, 2],
      kwargs: {},
      eta: null,
      expires: null,
      retries: 0,
      timeLimit: null,
      softTimeLimit: null,
      rootId: '2de288c0-2ebf-495f-b311-1a1ba1cbe240',
      parentId: null,
      group: null,
      groupIndex: null,
      shadow: null,
      origin: 'gen7075@vm',
      argsrepr: '(2, 2)',
      kwargsrepr: '{}',
      ignoreResult: false,
      callbacks: null,
      errbacks: null,
      chain: null,
      chord: null,
      headers: {},
      replyTo: 'b28c3123-609e-340d-a788-7a3a6a5cf19a',
      correlationId: '2de288c0-2ebf-495f-b311-1a1ba1cbe240',
      priority: 0,
      stamps: {},
      replacedTaskNesting: 0,
      protocol: 2,
    } satisfies TaskMessage);
  });

  it('decodes an ETA + expires + priority task (5.2.6), and its restored copy identically', () => {
    const [, queued, restored] = redis526;
    expect(queued!.queue).toBe('celery\x06\x163');
    expect(restored!.headers.redelivered).toBe(true);
    const task = decode(queued!);
    expect(task).toMatchObject({
      id: '4f899d18-f559-4fc6-a81a-8471efa42624',
      args: [3, 4],
      eta: new Date('2026-11-21T13:12:05.748Z'),
      expires: new Date('2026-11-21T13:21:35.748Z'),
      priority: 5,
      argsrepr: '(3, 4)',
    });
    expect(decode(restored!)).toEqual(task);
  });

  it('decodes Celery 5.6.3 headers: time limits [hard, soft], stamps, replaced_task_nesting', () => {
    const task = decode(redis563[0]!);
    expect(task).toMatchObject({
      id: 'b097acbe-7286-42af-ae12-18f6069a1c51',
      name: 'p56.add',
      args: [2, 2],
      eta: new Date('2026-11-21T13:21:14.288Z'),
      expires: new Date('2026-11-21T13:31:12.288Z'),
      timeLimit: 10,
      softTimeLimit: 5,
      priority: 5,
      stamps: {},
      replacedTaskNesting: 0,
      headers: {},
      replyTo: '9af8e6eb-aeaf-329f-9ed1-182904786a90',
    });
  });

  it('decodes kombu ≥5.3 JSON type markers in args and kwargs', () => {
    const task = decode(redis563[1]!);
    expect(task.name).toBe('p56.echo');
    expect(task.args).toEqual([
      new Date('2024-01-02T03:04:05Z'),
      Buffer.from('ab'),
      '00000000-0000-0000-0000-000000000001',
      '1.5',
    ]);
    expect(task.kwargs).toEqual({ d: '2024-01-02' });
    expect(task.argsrepr).toContain('datetime.datetime(2024, 1, 2, 3, 4, 5');
  });

  it('decodes a retry republish: same id, retries 1, parent is itself, leaked properties ignored', () => {
    const [original, retried] = retryChain.slice(1, 3);
    const first = decode(original!);
    const second = decode(retried!);
    expect(second.id).toBe(first.id);
    expect(second).toMatchObject({
      retries: 1,
      parentId: first.id,
      rootId: first.id,
      eta: new Date('2026-11-21T13:13:12.512Z'),
      origin: 'gen9429@vm',
      args: [7],
    });
  });

  it('decodes a 3-step chain: the remaining links in reverse order, the last link with chain []', () => {
    const [step1, step2, step3] = retryChain.slice(3, 6).map(decode);
    const link3 = sig('proj.add', [4], { task_id: '5c9d5627-9f00-4f2b-9af6-6f830f5fd664', reply_to: '03f03e88-a7ad-3eed-97dc-ed1972c67f9c' });
    const link2 = sig('proj.add', [3], { task_id: '31677f51-990d-4418-a944-a9664a2d068e', reply_to: '03f03e88-a7ad-3eed-97dc-ed1972c67f9c' });
    expect(step1!.chain).toEqual([link3, link2]);
    expect(step2).toMatchObject({ id: link2.options.task_id, args: [3, 3], chain: [link3], rootId: step1!.id, parentId: step1!.id });
    expect(step3).toMatchObject({ id: link3.options.task_id, args: [6, 4], chain: [], rootId: step1!.id, parentId: step2!.id });
  });

  it('decodes a link callback', () => {
    const [parent, child] = retryChain.slice(6, 8).map(decode);
    expect(parent!.callbacks).toEqual([sig('proj.add', [100])]);
    expect(child).toMatchObject({ args: [10, 100], parentId: parent!.id, rootId: parent!.id, callbacks: null });
  });

  it('decodes the AMQP capture (RabbitMQ, Celery 5.2.6)', () => {
    expect(decode(amqp)).toMatchObject({
      id: 'eeee08cc-cf94-4428-87af-8e7a90a054d6',
      name: 'wpamqp.add',
      args: [2, 2],
      kwargs: {},
      eta: new Date('2026-11-21T13:14:37.117Z'),
      expires: new Date('2026-11-21T13:24:36.117Z'),
      priority: 5,
      replyTo: '8be8d6c8-ccfd-3e42-8210-1727e1aa86d1',
      correlationId: 'eeee08cc-cf94-4428-87af-8e7a90a054d6',
      protocol: 2,
    });
  });

  it('re-encodes every captured message to the same headers (but lang) and the same body value', () => {
    for (const captured of allCaptured) {
      const task = decode(captured);
      const modern = Object.hasOwn(captured.headers, 'stamps');
      const encoded = encodeTaskMessage(task, { modernHeaders: modern });
      // A Date holds milliseconds: Python's microseconds are truncated, the instant is otherwise the same.
      // (The eta keeps them beside the Date, for inspect scheduled, and writes them back.)
      const toMillis = (value: unknown): unknown => (typeof value === 'string' ? formatIsoDate(parseIsoDate(value)) : value);
      const eta = captured.headers.eta;
      const expectedHeaders: Record<string, unknown> = { ...captured.headers, lang: 'ts', eta: typeof eta === 'string' ? formatIsoDate(parseIsoDate(eta), subMillisecondMicros(eta)) : eta, expires: toMillis(captured.headers.expires) };
      // `redelivered` is the Redis transport's mark on a restored message, not part of the task.
      delete expectedHeaders.redelivered;
      expect(encoded.headers, captured.source).toEqual(expectedHeaders);
      expect(Object.keys(encoded.headers), captured.source).toEqual(Object.keys(expectedHeaders));
      expect(decodeTaskMessage(encoded), captured.source).toEqual(task);
      // Same JSON value, same key order: only Python's separators/escaping differ.
      const ours = defaultSerializers.decode({ body: encoded.body, contentType: encoded.contentType });
      const theirs = JSON.parse(captured.body.toString('utf8')) as unknown;
      if (!captured.body.includes('__type__')) {
        expect(pythonJsonDumps(JSON.parse(encoded.body.toString('utf8'))), captured.source).toBe(captured.body.toString('utf8'));
        expect(ours).toEqual(theirs);
      }
      expect(encoded.properties).toMatchObject({
        correlationId: captured.properties.correlationId,
        replyTo: captured.properties.replyTo,
        priority: captured.properties.priority,
        deliveryMode: 2,
      });
    }
  });
});

describe('encoding like Celery', () => {
  const cases = loadCeleryEncodedCases();

  it.each(cases.map((c) => [c.input.name, c] as const))('matches Celery 5.2.6 as_task_v2 for %s', (_name, c) => {
    const input = c.input;
    const encoded = encodeTaskMessage(
      {
        id: input.id,
        name: input.task,
        args: input.args,
        kwargs: input.kwargs,
        eta: input.eta ? new Date(input.eta) : null,
        expires: input.expires ? new Date(input.expires) : null,
        group: input.group_id ?? null,
        groupIndex: input.group_index ?? null,
        retries: input.retries ?? 0,
        timeLimit: input.time_limit ?? null,
        softTimeLimit: input.soft_time_limit ?? null,
        rootId: input.root_id ?? null,
        parentId: input.parent_id ?? null,
        shadow: input.shadow ?? null,
        ignoreResult: input.ignore_result ?? false,
        callbacks: (input.callbacks as SignatureJson[] | undefined) ?? null,
        errbacks: (input.errbacks as SignatureJson[] | undefined) ?? null,
        chain: (input.chain as SignatureJson[] | undefined) ?? null,
        chord: (input.chord as SignatureJson | undefined) ?? null,
        headers: input.headers ?? {},
        replyTo: input.reply_to,
        origin: input.origin,
      },
      { modernHeaders: false, now: new Date('2026-11-21T13:12:00Z') },
    );
    const expected: Record<string, unknown> = { ...c.headers, lang: 'ts' };
    // Celery's saferepr differs from repr() for strings with quotes or control characters; both are display-only.
    if (/['"\n\t]/.test(String(c.headers.argsrepr) + String(c.headers.kwargsrepr))) {
      expected.argsrepr = encoded.headers.argsrepr;
      expected.kwargsrepr = encoded.headers.kwargsrepr;
    }
    expect(encoded.headers).toEqual(expected);
    expect(Object.keys(encoded.headers)).toEqual(Object.keys(expected));
    expect(pythonJsonDumps(JSON.parse(encoded.body.toString('utf8')))).toBe(c.body);
    expect(encoded.properties.correlationId).toBe(c.properties.correlation_id);
    expect(encoded.properties.replyTo).toBe(c.properties.reply_to);
    if (input.expires) expect(encoded.properties.expiration).toBe('605000');
  });

  it('writes the Celery 5.6.3 header key set and order by default, custom headers after, compression last', () => {
    const captured = redis563[0]!;
    const encoded = encodeTaskMessage({ id: 'x', name: 'p56.add', args: [2, 2] });
    expect(Object.keys(encoded.headers)).toEqual(Object.keys(captured.headers));
    expect(Object.keys(encoded.headers)).toEqual([...CELERY_52_HEADER_KEYS, ...CELERY_53_HEADER_KEYS]);
    expect(encoded.headers).toMatchObject({ lang: 'ts', timelimit: [null, null], stamped_headers: null, stamps: {}, replaced_task_nesting: 0 });

    const custom = encodeTaskMessage(
      { id: 'x', name: 'p56.add', headers: { tenant: 'acme', task: 'evil', retries: 99, compression: 'nope' } },
      { compression: 'zlib' },
    );
    expect(Object.keys(custom.headers)).toEqual([...CELERY_52_HEADER_KEYS, ...CELERY_53_HEADER_KEYS, 'tenant', 'compression']);
    expect(custom.headers).toMatchObject({ task: 'p56.add', retries: 0, tenant: 'acme', compression: 'application/x-gzip' });
  });

  it('writes the 5.2 key set without modern headers, and the same embed layout always', () => {
    const encoded = encodeTaskMessage({ id: 'x', name: 'proj.add', args: [2, 2] }, { modernHeaders: false });
    expect(Object.keys(encoded.headers)).toEqual(Object.keys(redis526[0]!.headers));
    expect(encoded.body.toString()).toBe('[[2,2],{},{"callbacks":null,"errbacks":null,"chain":null,"chord":null}]');
  });

  it('sets properties as kombu does: correlation id, reply_to "", persistent, priority 0, expiration in ms', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(encodeTaskMessage({ id: 'a', name: 't' }).properties).toEqual({ correlationId: 'a', replyTo: '', deliveryMode: 2, priority: 0 });
    const expiring = encodeTaskMessage(
      { id: 'a', name: 't', expires: new Date(now.getTime() + 600_000), priority: 5, replyTo: 'oid' },
      { now, deliveryMode: 1 },
    );
    expect(expiring.properties).toEqual({ correlationId: 'a', replyTo: 'oid', deliveryMode: 1, priority: 5, expiration: '600000' });
    expect(expiring.headers.expires).toBe('2026-01-01T00:10:00+00:00');
    const past = encodeTaskMessage({ id: 'a', name: 't', expires: new Date(now.getTime() - 5000) }, { now });
    expect(past.properties.expiration).toBe('0');
  });

  it('writes timelimit as [hard, soft]', () => {
    expect(encodeTaskMessage({ id: 'a', name: 't', timeLimit: 10, softTimeLimit: 5 }).headers.timelimit).toEqual([10, 5]);
    expect(encodeTaskMessage({ id: 'a', name: 't', softTimeLimit: 5 }).headers.timelimit).toEqual([null, 5]);
  });

  it('defaults root_id to the id, origin to gen<pid>@host, argsrepr to the Python repr', () => {
    const headers = encodeTaskMessage({ id: 'a', name: 't', args: ['x'], kwargs: { k: [true, null] } }).headers;
    expect(headers.root_id).toBe('a');
    expect(headers.origin).toMatch(new RegExp(`^gen${process.pid}@`));
    expect(headers.argsrepr).toBe("('x',)");
    expect(headers.kwargsrepr).toBe("{'k': [True, None]}");
    expect(encodeTaskMessage({ id: 'a', name: 't' }, { origin: 'gen1@h' }).headers.origin).toBe('gen1@h');
  });

  it('compresses the serialized body (zlib stream) and decodes it back', () => {
    const args = ['x'.repeat(10_000)];
    const encoded = encodeTaskMessage({ id: 'a', name: 't', args }, { compression: 'zlib' });
    expect(encoded.headers.compression).toBe('application/x-gzip');
    expect(encoded.body.length).toBeLessThan(1000);
    expect(encoded.body[0]).toBe(0x78); // zlib header, not gzip's 0x1f 0x8b (docs/wire.md#serializers-and-compression)
    expect(decodeTaskMessage(encoded, { accept: ['json'] }).args).toEqual(args);
  });
});
