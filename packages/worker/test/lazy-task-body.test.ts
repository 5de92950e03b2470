/**
 * A task message's body is read when the task is about to run, not on receipt, where the headers say everything the
 * worker needs before that (protocol 2, `argsrepr`/`kwargsrepr` headers, an uncompressed JSON list): a revoked or
 * expired task never deserializes it, and a hostile body is still refused before anything runs, with the reason the
 * eager decoder gives, dead-lettered as before.
 */
import { ContentDisallowed, DecodeError, defaultSerializers, MemoryBroker, type OutgoingMessage } from '@kq/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { App } from '../src/app/app';
import { InvalidTaskError } from '../src/errors/errors';
import { Logger } from '../src/log/logger';
import { decodeTaskHeaders, decodeTaskMessage, readTaskBody, taskBodyPending } from '../src/protocol/decode-task-message';
import { encodeTaskMessage } from '../src/protocol/index';
import type { Worker } from '../src/runtime/worker';

const received = (message: OutgoingMessage) => ({ ...message, properties: message.properties });

function withBody(message: OutgoingMessage, body: string | Buffer): OutgoingMessage {
  return { ...message, body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body };
}

const canvasMessage = encodeTaskMessage({
  name: 'lazy.add',
  id: 'lazy-1',
  args: [1, { nested: [2, 3] }],
  kwargs: { k: 'v' },
  group: 'g-1',
  callbacks: [{ task: 'lazy.next', args: [], kwargs: {}, options: {}, subtask_type: null, immutable: false }],
  chord: { task: 'lazy.join', args: [], kwargs: {}, options: {}, subtask_type: null, immutable: false },
});

describe('decodeTaskHeaders / readTaskBody', () => {
  it('leaves a protocol 2 JSON body unread, and reading it gives what the eager decoder gives', () => {
    const message = decodeTaskHeaders(received(canvasMessage));
    expect(taskBodyPending(message)).toBe(true);
    expect(message.args).toEqual([]);
    expect(message.callbacks).toBeNull();
    expect(message.argsrepr).toBe(decodeTaskMessage(received(canvasMessage)).argsrepr);
    readTaskBody(message, received(canvasMessage));
    expect(taskBodyPending(message)).toBe(false);
    expect(message).toEqual(decodeTaskMessage(received(canvasMessage)));
  });

  it('reads at once what the headers cannot stand for: compressed, hybrid, no argsrepr, other content types', () => {
    const base = encodeTaskMessage({ name: 'lazy.add', id: 'eager', args: [1] });
    const { argsrepr: _argsrepr, ...noRepr } = base.headers;
    const eager: OutgoingMessage[] = [
      encodeTaskMessage({ name: 'lazy.add', id: 'zipped', args: [1] }, { compression: 'zlib' }),
      withBody(base, JSON.stringify({ args: [7], kwargs: {}, id: 'eager', task: 'lazy.add' })),
      { ...base, headers: noRepr },
    ];
    for (const message of eager) expect(taskBodyPending(decodeTaskHeaders(received(message)))).toBe(false);
    // Raw bytes are read (and refused: no list of arguments) on receipt.
    expect(() => decodeTaskHeaders(received({ ...base, contentType: 'application/data' }))).toThrow(InvalidTaskError);
    // The hybrid body's args win over nothing: it was read as protocol 1, as Celery reads it.
    expect(decodeTaskHeaders(received(eager[1] as OutgoingMessage)).args).toEqual([7]);
  });

  it('refuses content outside the accept list on receipt, unread', () => {
    const spy = vi.spyOn(defaultSerializers.codec('json'), 'decode');
    try {
      expect(() => decodeTaskHeaders(received(canvasMessage), { accept: ['msgpack'] })).toThrow(ContentDisallowed);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it.each([
    ['a 2-element body', '[[1], {}]'],
    ['args that are not a list', '[1, {}, null]'],
    ['kwargs that are not an object', '[[], [], null]'],
    ['an embed that is not an object', '[[], {}, 5]'],
    ['callbacks that are not signatures', '[[], {}, {"callbacks": [5]}]'],
    ['text that is not JSON', '[[1], {'],
    ['nesting past the limit', `[${'['.repeat(1200)}${']'.repeat(1200)}, {}, null]`],
    ['bytes that are not UTF-8', Buffer.from([0x5b, 0xff, 0xfe, 0x5d])],
  ])('refuses %s when it is read, with the error the eager decoder gives', (_what, body) => {
    const hostile = received(withBody(canvasMessage, body));
    const message = decodeTaskHeaders(hostile);
    expect(taskBodyPending(message)).toBe(true);
    let eager: unknown;
    try {
      decodeTaskMessage(hostile);
    } catch (error) {
      eager = error;
    }
    expect(eager).toBeInstanceOf(Error);
    expect(() => readTaskBody(message, hostile)).toThrow((eager as Error).message);
    try {
      readTaskBody(message, hostile);
    } catch (error) {
      expect((error as Error).constructor).toBe((eager as Error).constructor);
    }
  });
});

let seq = 0;

describe('a worker reading bodies when tasks run (memory://)', () => {
  let app: App;
  let worker: Worker | undefined;

  beforeEach(() => {
    const broker = `lazy-body-${++seq}`;
    MemoryBroker.reset(broker);
    app = new App('lazy', { broker: `memory://${broker}`, backend: `memory://${broker}` });
  });

  afterEach(async () => {
    await worker?.stop({ cold: true });
    worker = undefined;
    await app.close();
  });

  const start = async (): Promise<Worker> => {
    worker = app.worker({ hostname: `lazy${seq}@test`, logger: new Logger('lazy', { level: 'critical', sink: () => undefined }), cluster: false });
    await worker.start();
    return worker;
  };

  /** The JSON codec's decode calls that read a body containing `marker`. */
  const decodesOf = (spy: { mock: { calls: unknown[][] } }, marker: string): number =>
    spy.mock.calls.filter(([body]) => Buffer.isBuffer(body) && body.toString('utf8').includes(marker)).length;

  it('never deserializes the body of a revoked or expired task, and deserializes a running one once', async () => {
    let runs = 0;
    const job = app.task('lazy.job', (_ctx, _marker: string) => ++runs);
    const w = await start();
    const spy = vi.spyOn(defaultSerializers.codec('json'), 'decode');
    try {
      await app.control.revoke('revoked-lazy');
      await vi.waitFor(() => expect(w.state.revoked.has('revoked-lazy')).toBe(true));
      const revoked = await job.applyAsync(['revoked-marker'], { taskId: 'revoked-lazy' });
      const expired = await job.applyAsync(['expired-marker'], { expires: new Date(Date.now() - 1000) });
      await vi.waitFor(async () => expect(await revoked.state()).toBe('REVOKED'));
      await vi.waitFor(async () => expect(await expired.state()).toBe('REVOKED'));
      const ran = await job.applyAsync(['ran-marker']);
      expect(await ran.get({ timeout: 5000 })).toBe(1);
      expect(decodesOf(spy, 'revoked-marker')).toBe(0);
      expect(decodesOf(spy, 'expired-marker')).toBe(0);
      expect(decodesOf(spy, 'ran-marker')).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(runs).toBe(1);
  });

  it('refuses a hostile body before running the task, with the eager reason, stores a DecodeError, and runs the next', async () => {
    let runs = 0;
    app.task('lazy.add', () => ++runs);
    const w = await start();
    const rejected: Error[] = [];
    w.on('rejected', (_delivery, reason) => rejected.push(reason));
    // Announced on receipt (its headers were read), so its end is announced too: a monitor is not left with it pending.
    const events: string[] = [];
    w.on('task', (kind, request) => events.push(`${kind}:${request.id}`));
    const channel = await app.connection.channel();
    const shapeless = withBody({ ...canvasMessage, headers: { ...canvasMessage.headers, id: 'shapeless' } }, '[[1], {}]');
    const broken = withBody({ ...canvasMessage, headers: { ...canvasMessage.headers, id: 'broken' } }, '[[1], {');
    await channel.publish('', 'celery', shapeless);
    await channel.publish('', 'celery', broken);
    expect(await (await app.sendTask('lazy.add', [1])).get({ timeout: 5000 })).toBe(1);
    await vi.waitFor(() => expect(rejected).toHaveLength(2));
    const reasonOf = (message: OutgoingMessage): string => {
      try {
        decodeTaskMessage(received(message));
      } catch (error) {
        return (error as Error).message;
      }
      return 'decoded';
    };
    expect(rejected[0]).toBeInstanceOf(InvalidTaskError);
    expect(rejected[0]?.message).toBe(reasonOf(shapeless));
    expect(rejected[1]).toBeInstanceOf(DecodeError);
    expect(rejected[1]?.message).toBe(reasonOf(broken));
    expect(runs).toBe(1);
    // An unreadable body that names its id gets its FAILURE, as when it was read on receipt.
    expect(await (await app.asyncResult('broken')).state()).toBe('FAILURE');
    expect(w.state.reserved.size).toBe(0);
    expect(w.state.active.size).toBe(0);
    expect(events.filter((event) => event.endsWith(':shapeless'))).toEqual(['received:shapeless', 'rejected:shapeless']);
  });
});
