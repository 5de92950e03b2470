// Re-sending a task: what it is sent with, and when the dashboard refuses because it does not know the arguments exactly.
import { pythonTupleRepr, type ResultMeta } from '@kq/core';
import { ClusterTask } from '@kq/worker';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePythonLiteral } from '../src/python-literal';
import { resendPlan } from '../src/task-resend';

const seen = (fields: Record<string, unknown>): ClusterTask => {
  const task = new ClusterTask('t1');
  Object.assign(task.fields, { name: 'proj.add', ...fields });
  return task;
};

describe('parsePythonLiteral', () => {
  it("reads Python's repr of plain data", () => {
    expect(parsePythonLiteral("(1, -2.5, 'a\\'b', \"it's\", None, True, False, [1, (2,)], {'k': {'n': '\\n\\x00\\u00e9'}})")).toEqual([
      1,
      -2.5,
      "a'b",
      "it's",
      null,
      true,
      false,
      [1, [2]],
      { k: { n: '\n\x00é' } },
    ]);
    expect(parsePythonLiteral('()')).toEqual([]);
    expect(parsePythonLiteral('{}')).toEqual({});
  });

  it('refuses what is not plain data or is cut', () => {
    for (const text of ["('abc...", '(1, 2...', "(b'x',)", '({1, 2},)', '(<object at 0x1>,)', "({1: 'a'},)", '(1 2)', '(1,) x', "('\\q',)", "('\\U7fffffff',)"]) {
      expect(parsePythonLiteral(text), text).toBeUndefined();
    }
  });

  it('reads back what pythonRepr writes (JSON-like values)', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 5 }), (args) => {
        const text = pythonTupleRepr(args);
        const back = parsePythonLiteral(text);
        // -0 and floats like 1e+21 re-render differently: the round-trip check (below) refuses those
        if (Array.isArray(back) && pythonTupleRepr(back) === text) expect(back).toEqual(JSON.parse(JSON.stringify(args)));
      }),
    );
  });
});

describe('resendPlan', () => {
  it("reads the events' reprs back when they re-render to the same text, with the task's queue", () => {
    expect(resendPlan(seen({ args: "(2, 'x')", kwargs: "{'y': [1, None]}", queue: 'q1' }), null)).toEqual({
      ok: true,
      name: 'proj.add',
      args: [2, 'x'],
      kwargs: { y: [1, null] },
      options: { queue: 'q1' },
      source: 'events',
    });
    expect(resendPlan(seen({ args: '()', kwargs: '{}', exchange: 'ex', routing_key: 'rk' }), null)).toMatchObject({ ok: true, options: { exchange: 'ex', routingKey: 'rk' } });
  });

  it('refuses cut reprs, tuples and floats JSON cannot tell apart, and unknown tasks, saying why', () => {
    for (const args of [`('${'x'.repeat(1020)}...`, '((1, 2),)', '(1.0,)', '(<Foo>,)']) {
      const plan = resendPlan(seen({ args, kwargs: '{}' }), null);
      expect(plan.ok, args).toBe(false);
      expect(plan.ok ? '' : plan.reason).toMatch(/argsrepr\/kwargsrepr.*result_extended/);
    }
    expect(resendPlan(seen({ name: undefined, args: '()', kwargs: '{}' }), null)).toMatchObject({ ok: false, reason: expect.stringMatching(/name is not known/) });
    expect(resendPlan(undefined, null)).toMatchObject({ ok: false });
    expect(resendPlan(seen({}), null)).toMatchObject({ ok: false, reason: expect.stringMatching(/not known/) });
  });

  it("routes to the queue an event or result named, else the receiving worker's only queue, else asks for one", () => {
    const unrouted = seen({ args: '(1,)', kwargs: '{}' });
    expect(resendPlan(unrouted, null)).toMatchObject({ ok: false, needsQueue: true, reason: expect.stringMatching(/queue it was sent to is not known/) });
    expect(resendPlan(unrouted, null, { workerQueues: ['a', 'b'] })).toMatchObject({ ok: false, needsQueue: true });
    expect(resendPlan(unrouted, null, { workerQueues: ['only'] })).toMatchObject({ ok: true, options: { queue: 'only' } });
    expect(resendPlan(unrouted, null, { queue: 'given', workerQueues: ['only'] })).toMatchObject({ ok: true, options: { queue: 'given' } });
    expect(resendPlan(seen({ args: '(1,)', kwargs: '{}', queue: 'sent-to' }), null, { workerQueues: ['only'] })).toMatchObject({ ok: true, options: { queue: 'sent-to' } });
  });

  it("takes the exact arguments of an extended result (result_extended) over the events' reprs", () => {
    const meta: ResultMeta = { status: 'SUCCESS', result: 3, traceback: null, children: [], date_done: null, task_id: 't1', name: 'proj.add', args: [[1, 2], 1.5], kwargs: { big: 'x'.repeat(5000) }, queue: 'q2' };
    expect(resendPlan(seen({ args: '((1, 2), 1.5)', kwargs: "{'big': 'xxx...", queue: undefined }), meta)).toEqual({
      ok: true,
      name: 'proj.add',
      args: [[1, 2], 1.5],
      kwargs: { big: 'x'.repeat(5000) },
      options: { queue: 'q2' },
      source: 'result',
    });
  });
});
