/**
 * A signature's options: kq's camelCase names and Celery's snake_case ones both apply (`new Signature(..., { taskId })`
 * used to keep `taskId` under that name, which nothing reads, and send the task under another id); anything else is
 * refused at run time as at compile time (canvas-types.test.ts). Options read from the wire are kept whole.
 */
import { MemoryBroker } from '@kq/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { Signature } from '../src/canvas/index';
import type { SignatureJson } from '../src/protocol/index';
import { InvalidSignatureOption } from '../src/errors/errors';
import { decodeTaskMessage } from '../src/protocol/index';

let seq = 0;

describe('signature options', () => {
  let app: App;

  beforeEach(() => {
    const broker = `signature-options-${++seq}`;
    MemoryBroker.reset(broker);
    app = new App('client', { broker: `memory://${broker}` });
  });

  afterEach(async () => {
    await app.close();
  });

  const sent = async (queue = 'celery'): Promise<ReturnType<typeof decodeTaskMessage>> => {
    const channel = await app.connection.channel();
    const delivery = await channel.get(queue);
    if (!delivery) throw new Error(`nothing in ${queue}`);
    await delivery.ack();
    return decodeTaskMessage(delivery);
  };

  it('new Signature(..., { taskId, ... }) applies them under their Celery names', async () => {
    const signature = new Signature('py.add', [1, 2], {}, { taskId: 'fixed-id', queue: 'elsewhere', timeLimit: 5 }, false, null, app);
    expect(signature.id).toBe('fixed-id');
    expect(signature.toJSON().options).toEqual({ task_id: 'fixed-id', queue: 'elsewhere', time_limit: 5 });
    const result = await signature.delay();
    expect(result.id).toBe('fixed-id');
    const message = await sent('elsewhere');
    expect(message).toMatchObject({ id: 'fixed-id', timeLimit: 5 });
  });

  it("takes Celery's names too, as a Python Signature(options=...) spells them", async () => {
    const signature = new Signature('py.add', [1, 2], {}, { task_id: 'celery-id', soft_time_limit: 3 }, false, null, app);
    await signature.delay();
    expect(await sent()).toMatchObject({ id: 'celery-id', softTimeLimit: 3 });
  });

  it('refuses an unknown option at run time, naming the one meant', () => {
    const untyped = { taskid: 'x' } as Record<string, unknown>;
    const error = ((): unknown => {
      try {
        return new Signature('py.add', [], {}, untyped);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(InvalidSignatureOption);
    expect((error as Error).message).toMatch(/Unknown signature option "taskid"\. Did you mean "taskId"\?.*taskId \(task_id\)/);
    const signature = new Signature('py.add', [], {}, {}, false, null, app);
    expect(() => signature.set({ retryPolicy: {} } as Record<string, unknown>)).toThrow(InvalidSignatureOption);
    expect(() => signature.applyAsync([], {}, { bogus: 1 } as Record<string, unknown>)).toThrow(InvalidSignatureOption);
    expect(() => app.signature('py.add', [], {}, { routing_Key: 'x' } as Record<string, unknown>)).toThrow(/Did you mean "routingKey"/);
  });

  it("keeps a sender's own options when read from JSON (Celery keeps unknown ones; 5.3+ stamps add theirs)", () => {
    const json = { task: 'py.add', args: [], kwargs: {}, options: { task_id: 'a', stamped_headers: ['mine'], mine: 'x' }, subtask_type: null, immutable: false };
    const signature = Signature.fromJSON(json, app);
    expect(signature.options).toEqual(json.options);
    expect(signature.clone([1]).toJSON().options).toEqual(json.options);
  });

  it('sends a stamped signature with its stamps, as Celery 5.3+ does (a worker revoking by stamped header finds them)', async () => {
    const options = { task_id: 'stamped', stamped_headers: ['monitoring_id', 'batch'], monitoring_id: '4242', batch: [1, 'b'] };
    await Signature.fromJSON({ task: 'py.add', args: [1, 2], kwargs: {}, options, subtask_type: null, immutable: true }, app).delay();
    const message = await sent();
    expect(message.stamps).toEqual({ monitoring_id: '4242', batch: [1, 'b'] });
  });

  it("a chord read from a frozen chain (its header a group with an id, as Python writes it) sends the header in that group, each time", async () => {
    const body = { task: 'py.tsum', args: [], kwargs: {}, options: { task_id: 'body-id' }, subtask_type: null, immutable: false };
    const header = {
      task: 'celery.group', args: [], kwargs: { tasks: [{ task: 'py.add', args: [1, 1], kwargs: {}, options: { task_id: 'h-1', chord: body, group_index: 0 }, subtask_type: null, immutable: false }] },
      options: { task_id: 'frozen-group', chord: body, root_id: null, parent_id: null }, subtask_type: 'group', immutable: false,
    };
    const json = { task: 'celery.chord', args: [], kwargs: { kwargs: {}, header, body }, options: {}, subtask_type: 'chord', immutable: false };
    // A step that ran twice (its message duplicated) sends the chord twice: both header sends join the same group.
    const withBackend = new App('client', { broker: app.conf.broker, backend: `memory://${String(seq)}` });
    for (let run = 0; run < 2; run++) {
      await Signature.fromJSON(json, withBackend).delay();
      expect(await sent()).toMatchObject({ id: 'h-1', group: 'frozen-group' });
    }
    await withBackend.close();
  });

  it("a chord given a group_index (a task replaced by a group) sends its header with their own indices, as Python does", async () => {
    const member = (id: string): SignatureJson => ({ task: 'py.add', args: [1, 1], kwargs: {}, options: { task_id: id }, subtask_type: null, immutable: false });
    const body = { task: 'celery.accumulate', args: [], kwargs: { index: 0 }, options: {}, subtask_type: null, immutable: false };
    const json = { task: 'celery.chord', args: [], kwargs: { kwargs: {}, header: [member('m-0'), member('m-1')], body }, options: {}, subtask_type: 'chord', immutable: false };
    const withBackend = new App('client', { broker: app.conf.broker, backend: `memory://${String(seq)}` });
    // What replace gives the replacing chord: the replaced member's group and index, which are the body's to keep.
    await Signature.fromJSON(json, withBackend).applyWire([], {}, { group_index: 7, group_id: 'outer' });
    const messages = [await sent(), await sent()].sort((a, b) => a.id.localeCompare(b.id));
    expect(messages.map((message) => [message.id, message.groupIndex])).toEqual([['m-0', 0], ['m-1', 1]]);
    await withBackend.close();
  });
});
