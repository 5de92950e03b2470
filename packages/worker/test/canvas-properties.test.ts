/**
 * Property tests for the chain's embed encoding (Celery's reversed `chain` field, popped step by step by whichever
 * worker runs each step). The chord join's counter is checked by @kq/test-harness's defineChordJoinSuite.
 */
import { MemoryChordJoin, type ResultBackend } from '@kq/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ApplyOptions, TaskEmbed } from '../src/send/apply-options';
import { Chain, Signature, chain, chord, group } from '../src/canvas/index';
import type { CanvasAppView } from '../src/contract/app-contract';
import type { SignatureJson } from '../src/protocol/index';

interface Sent {
  name: string;
  args: unknown[];
  options: ApplyOptions;
  embed: TaskEmbed | undefined;
}

/** A canvas app that records what would be published instead of publishing it. */
function recordingApp(sent: Sent[]): CanvasAppView {
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
