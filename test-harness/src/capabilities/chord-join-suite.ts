import { randomUUID } from 'node:crypto';
import type { ChordJoin, ChordPart, ResultBackend, ResultTuple, TaskState } from '@kq/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { suiteTitle, type CapabilitySuiteOptions } from './capability-suite-options';

export interface ChordJoinSuiteOptions extends Pick<CapabilitySuiteOptions, 'name' | 'skip'> {
  /**
   * Makes a fresh result backend on the store under test. Called more than once per test: each backend stands for a
   * separate process (header tasks finish on different workers), and all of them must share one store.
   */
  create: () => ResultBackend | Promise<ResultBackend>;
  /** How many random chords the property check tries. Default 60. */
  runs?: number;
}

/**
 * Checks a result backend's `chordJoin` against core's `ChordJoin` contract (Celery's native join): however the
 * header tasks' parts arrive, one by one or all at once and through several processes, exactly one part completes
 * the chord and gets every part in group order, extra parts (`addToChord`) included; nothing completes before the
 * size is set, nor again after completion. Also the backend's `groups` (saved group results) where it has them.
 * Call at the top level of a test file.
 */
export function defineChordJoinSuite(options: ChordJoinSuiteOptions): void {
  (options.skip ? describe.skip : describe)(suiteTitle('chord join', options), () => {
    it('exactly one part completes the chord, with every part in group order, however and wherever they arrive', async () => {
      await withJoins(options, 3, async (joins) => {
        const chords = fc.integer({ min: 1, max: 12 }).chain((size) =>
          fc.tuple(
            fc.constant(size),
            fc.shuffledSubarray([...Array(size).keys()], { minLength: size, maxLength: size }),
            fc.integer({ min: 0, max: 2 }),
            fc.boolean(),
            fc.array(fc.integer({ min: 0, max: joins.length - 1 }), { minLength: size + 2, maxLength: size + 2 }),
          ),
        );
        await fc.assert(
          fc.asyncProperty(chords, async ([size, order, extra, atOnce, processes]) => {
            const groupId = randomUUID();
            await joins[0]!.setChordSize(groupId, size, 60_000);
            for (let i = 0; i < extra; i++) await joins[i % joins.length]!.addToChord(groupId);
            const indexes = [...order, ...Array.from({ length: extra }, (_, i) => size + i)];
            const add = (index: number, at: number): Promise<ChordPart[] | null> =>
              joins[processes[at]!]!.addPart(groupId, part(index), index, 60_000);
            const outcomes = atOnce ? await Promise.all(indexes.map(add)) : [];
            if (!atOnce) for (const [at, index] of indexes.entries()) outcomes.push(await add(index, at));
            const finishers = outcomes.filter((outcome) => outcome !== null);
            expect(finishers).toHaveLength(1);
            // One by one, only the last part to arrive completes it.
            if (!atOnce) expect(outcomes[outcomes.length - 1]).not.toBeNull();
            const sorted = [...indexes].sort((a, b) => a - b);
            expect(finishers[0]!.map((done) => done.taskId)).toEqual(sorted.map((index) => `t${index}`));
            expect(finishers[0]).toEqual(sorted.map(part));
          }),
          { numRuns: options.runs ?? 60 },
        );
      });
    });

    it('nothing completes before the size is set, nor again once the chord completed', async () => {
      await withJoins(options, 2, async ([a, b]) => {
        const early = randomUUID();
        expect(await a!.addPart(early, part(0), 0, 60_000)).toBeNull();
        expect(await b!.addPart(early, part(1), 1, 60_000)).toBeNull();

        const groupId = randomUUID();
        await a!.setChordSize(groupId, 2, 60_000);
        expect(await a!.addPart(groupId, part(1), 1, 60_000)).toBeNull();
        expect(await b!.addPart(groupId, part(0), 0, 60_000)).toEqual([part(0), part(1)]);
        // A header task delivered again after the chord completed (its worker died before acking) fires nothing.
        expect(await a!.addPart(groupId, part(1), 1, 60_000)).toBeNull();
      });
    });

    it('a part without a group index comes after the indexed ones', async () => {
      await withJoins(options, 1, async ([join]) => {
        const groupId = randomUUID();
        await join!.setChordSize(groupId, 3, 60_000);
        expect(await join!.addPart(groupId, part(9), null, 60_000)).toBeNull();
        expect(await join!.addPart(groupId, part(2), 2, 60_000)).toBeNull();
        expect((await join!.addPart(groupId, part(1), 1, 60_000))?.map((done) => done.taskId)).toEqual(['t1', 't2', 't9']);
      });
    });

    it('saves, restores and deletes a group result, seen from another process', async () => {
      const backends = await Promise.all([options.create(), options.create()]);
      try {
        const [writer, reader] = backends.map((backend) => backend.groups);
        if (!writer || !reader) throw new Error(`The ${backends[0]!.name} result backend has chordJoin but no groups: the suite needs both.`);
        const groupId = randomUUID();
        const tuple: ResultTuple = [[groupId, null], [[['a', null], null], [['b', null], null]]];
        expect(await reader.restoreGroup(groupId)).toBeNull();
        await writer.saveGroup(groupId, tuple, 60_000);
        expect(await reader.restoreGroup(groupId)).toEqual(tuple);
        await reader.deleteGroup(groupId);
        expect(await writer.restoreGroup(groupId)).toBeNull();
      } finally {
        await Promise.all(backends.map((backend) => backend.close().catch(() => undefined)));
      }
    });
  });
}

/** Part `index` of a chord: every fifth one failed, as a header with failures still completes the join. */
function part(index: number): ChordPart {
  const state: TaskState = index % 5 === 4 ? 'FAILURE' : 'SUCCESS';
  return { taskId: `t${index}`, state, result: state === 'SUCCESS' ? index * 10 : { exc_type: 'ValueError', exc_message: [String(index)], exc_module: 'builtins' } };
}

async function withJoins(options: ChordJoinSuiteOptions, count: number, body: (joins: ChordJoin[]) => Promise<void>): Promise<void> {
  const backends: ResultBackend[] = [];
  try {
    for (let i = 0; i < count; i++) backends.push(await options.create());
    const joins = backends.map((backend) => {
      if (!backend.chordJoin) throw new Error(`The ${backend.name} result backend has no chordJoin: the suite needs one.`);
      return backend.chordJoin;
    });
    await body(joins);
  } finally {
    await Promise.all(backends.map((backend) => backend.close().catch(() => undefined)));
  }
}
