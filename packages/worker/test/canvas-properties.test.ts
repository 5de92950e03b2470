/**
 * Property tests for the canvas's two algorithms: the chain's embed encoding (Celery's reversed `chain` field, popped
 * step by step by whichever worker runs each step) and the chord join counter (exactly one finisher, in group order).
 */
import { MemoryChordJoin, type ResultBackend, type TaskState } from '@kq/core';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ApplyOptions, TaskEmbed } from '../src/apply-options';
import { Chain, Signature, chain, chord, group, type CanvasApp } from '../src/canvas/index';
import type { SignatureJson } from '../src/protocol/index';

interface Sent {
  name: string;
  args: unknown[];
  options: ApplyOptions;
  embed: TaskEmbed | undefined;
}

/** A canvas app that records what would be published instead of publishing it. */
function recordingApp(sent: Sent[]): CanvasApp {
  let next = 0;
  return {
    threadOid: 'oid',
    conf: { resultExpires: 60, resultChordRetryInterval: 1, resultDateDone: 'aware' },
    sendTaskMessage: async (name, args, options, embed) => {
      sent.push({ name, args, options, embed });
      return options.taskId ?? `generated-${next++}`;
    },
    backend: async () => ({ chordJoin: new MemoryChordJoin() }) as unknown as ResultBackend,
    withTaskDefaults: (_name, options) => options,
    routeQueue: () => 'celery',
    revoker: async () => undefined,
  };
}

const stepArb = fc.record({
  name: fc.stringMatching(/^[a-z]{1,6}\.[a-z]{1,6}$/),
  args: fc.array(fc.integer(), { maxLength: 3 }),
  queue: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
  priority: fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }),
  immutable: fc.boolean(),
});

describe('chain embed encoding', () => {
  it('the steps run in order when each worker pops the next from the reversed chain, with every option kept', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 8 }), fc.integer(), async (steps, seed) => {
        const sent: Sent[] = [];
        const app = recordingApp(sent);
        const signatures = steps.map((step) => {
          const options: Record<string, unknown> = {};
          if (step.queue) options['queue'] = step.queue;
          if (step.priority !== undefined) options['priority'] = step.priority;
          return new Signature(step.name, step.args, {}, options, step.immutable, null, app);
        });
        const result = await new Chain(signatures, {}, app).applyWire([seed], {}, {});
        expect(sent).toHaveLength(1);
        // Simulate the workers: each runs the message's task, then pops the next step off the chain it carried.
        const ran: Array<{ name: string; args: unknown[]; queue: string | undefined; priority: number | undefined; id: string | undefined }> = [];
        let message: { name: string; args: unknown[]; options: Record<string, unknown>; chain: SignatureJson[] } = {
          name: (sent[0] as Sent).name,
          args: (sent[0] as Sent).args,
          options: { queue: (sent[0] as Sent).options.queue, priority: (sent[0] as Sent).options.priority, task_id: (sent[0] as Sent).options.taskId },
          chain: [...((sent[0] as Sent).options.chain ?? [])],
        };
        for (;;) {
          ran.push({ name: message.name, args: message.args, queue: message.options['queue'] as string | undefined, priority: message.options['priority'] as number | undefined, id: message.options['task_id'] as string | undefined });
          const next = message.chain.pop();
          if (!next) break;
          const previous = 'result';
          message = { name: next.task, args: next.immutable ? next.args : [previous, ...next.args], options: next.options, chain: message.chain };
        }
        expect(ran.map((step) => step.name)).toEqual(steps.map((step) => step.name));
        expect(ran.map((step) => step.queue)).toEqual(steps.map((step) => step.queue));
        expect(ran.map((step) => step.priority)).toEqual(steps.map((step) => step.priority));
        // The first step gets the partial argument (unless immutable); later mutable ones get the previous result.
        ran.forEach((step, index) => {
          const own = (steps[index] as (typeof steps)[number]).args;
          const expected = (steps[index] as (typeof steps)[number]).immutable ? own : [index === 0 ? seed : 'result', ...own];
          expect(step.args).toEqual(expected);
        });
        // Every step was frozen with its own id; the chain's result is the last step's.
        expect(new Set(ran.map((step) => step.id)).size).toBe(steps.length);
        expect(result.id).toBe(ran[ran.length - 1]?.id);
      }),
      { numRuns: 200 },
    );
  });

  it('any canvas survives its JSON form: read back, it writes the same JSON', () => {
    const app = recordingApp([]);
    const leaf = stepArb.map((step) => new Signature(step.name, step.args, {}, step.queue ? { queue: step.queue } : {}, step.immutable, null, app));
    const canvas = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf,
        fc.array(tie('node'), { minLength: 1, maxLength: 3 }).map((tasks) => chain(...(tasks as Signature[]))),
        fc.array(tie('node'), { minLength: 1, maxLength: 3 }).map((tasks) => group(tasks as Signature[])),
        fc.tuple(fc.array(tie('node'), { minLength: 1, maxLength: 3 }), leaf).map(([header, body]) => chord(header as Signature[], body)),
      ),
    })).node;
    fc.assert(
      fc.property(canvas, (signature) => {
        const json = JSON.parse(JSON.stringify(signature)) as SignatureJson;
        const back = Signature.fromJSON(json, app);
        expect(back.subtaskType).toBe(json.subtask_type);
        expect(JSON.parse(JSON.stringify(back))).toEqual(json);
      }),
      { numRuns: 200 },
    );
  });
});

interface Part {
  taskId: string;
  state: TaskState;
  index: number;
}

const partsArb = fc
  .integer({ min: 1, max: 12 })
  .chain((size) => fc.tuple(fc.constant(size), fc.shuffledSubarray([...Array(size).keys()], { minLength: size, maxLength: size }), fc.integer({ min: 0, max: 2 })));

async function checkJoin(join: { setChordSize(g: string, s: number, e: number): Promise<void>; addToChord(g: string): Promise<void>; addPart: MemoryChordJoin['addPart'] }, size: number, order: number[], extra: number, concurrent: boolean): Promise<void> {
  const groupId = randomUUID();
  await join.setChordSize(groupId, size, 60_000);
  for (let i = 0; i < extra; i += 1) await join.addToChord(groupId);
  const parts: Part[] = [...order, ...Array.from({ length: extra }, (_, i) => size + i)].map((index) => ({ taskId: `t${index}`, state: index % 5 === 4 ? 'FAILURE' : 'SUCCESS', index }));
  const add = (part: Part) => join.addPart(groupId, { taskId: part.taskId, state: part.state, result: part.index }, part.index, 60_000);
  const outcomes = concurrent ? await Promise.all(parts.map(add)) : await parts.reduce<Promise<Array<Awaited<ReturnType<typeof add>>>>>(async (done, part) => [...(await done), await add(part)], Promise.resolve([]));
  const finishers = outcomes.filter((outcome) => outcome !== null);
  // Exactly one part completes the chord, and only the last one to arrive when they come one by one.
  expect(finishers).toHaveLength(1);
  if (!concurrent) expect(outcomes[outcomes.length - 1]).not.toBeNull();
  const all = finishers[0] ?? [];
  expect(all.map((part) => part.taskId)).toEqual(parts.map((part) => part.taskId).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))));
  expect(all.map((part) => part.result)).toEqual([...parts].sort((a, b) => a.index - b.index).map((part) => part.index));
}

describe('chord join counter', () => {
  it('memory: exactly one part completes the join, with every part in group order', async () => {
    await fc.assert(
      fc.asyncProperty(partsArb, fc.boolean(), async ([size, order, extra], concurrent) => {
        await checkJoin(new MemoryChordJoin(), size, order, extra, concurrent);
      }),
      { numRuns: 200 },
    );
  });
});
