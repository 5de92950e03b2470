/**
 * The canvas's types, checked by the compiler (`pnpm lint:types` compiles the tests): a chain's result is its last
 * step's, a group's the tuple of its members', a chord's body must take its header's results. Each
 * `@ts-expect-error` is a canvas that must not compile.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { App } from '../src/app/app';
import { Signature, chain, chord, group } from '../src/canvas/index';
import type { AsyncResult, GroupResult } from '../src/results/index';

const app = new App('types', { broker: 'memory://canvas-types' });
const add = app.task('types.add', (_ctx, x: number, y: number) => x + y);
const total = app.task('types.total', (_ctx, values: number[]) => values.reduce((sum, value) => sum + value, 0));
const shout = app.task('types.shout', (_ctx, text: string) => text.toUpperCase());
const join = app.task('types.join', (_ctx, parts: string[]) => parts.join(' '));

describe('canvas types', () => {
  it('flow through chains, groups and chords', () => {
    // Only types are checked: nothing is sent (the app has no backend a chord could use).
    expectTypeOf(chain(add.s(1, 1), add.s(2), shout.si('done')).delay).returns.toEqualTypeOf<Promise<AsyncResult<string>>>();
    expectTypeOf(group([add.s(1, 1), shout.s('x')]).delay).returns.toEqualTypeOf<Promise<GroupResult<[number, string]>>>();
    expectTypeOf(chord([add.s(1, 1), add.s(2, 2)], total.s()).delay).returns.toEqualTypeOf<Promise<AsyncResult<number>>>();
    expectTypeOf(chord([shout.s('a'), shout.s('b')], join.s()).delay).returns.toEqualTypeOf<Promise<AsyncResult<string>>>();
    // A body that ignores the results (si) or is only known by name takes anything.
    chord([add.s(1, 1)], shout.si('done'));
    chord([add.s(1, 1)], app.signature('py.report'));
    // A chain's steps must take the previous step's result.
    chain(add.s(1, 1), add.s(2), total.si([1]), shout.si('x'), shout.s());
    // @ts-expect-error — shout takes a string, add gives a number
    chain(add.s(1, 1), shout.s());
    // @ts-expect-error — total takes number[], shout gives a string
    chain(shout.s('a'), total.s());
    chain(group([add.s(1, 1), add.s(2, 2)]), total.s()); // a group's tuple of numbers is a number[]
    // @ts-expect-error — join takes string[], the header gives numbers
    chord([add.s(1, 1), add.s(2, 2)], join.s());
    // @ts-expect-error — total takes number[], the header gives strings
    chord([shout.s('a')], total.s());
    expect(true).toBe(true);
  });

  it("take a signature's options by kq's names or Celery's, and nothing else", () => {
    // Only types are checked: the refusals at run time are in signature-options.test.ts.
    const check = (build: () => unknown): void => void build;
    check(() => new Signature('py.add', [], {}, { taskId: 'a', routingKey: 'r', timeLimit: 1 }));
    check(() => new Signature('py.add', [], {}, { task_id: 'a', routing_key: 'r', time_limit: 1 }));
    check(() => add.s(1, 2).set({ taskId: 'a', linkError: shout.s() }));
    // @ts-expect-error — a misspelt option is not silently kept
    check(() => new Signature('py.add', [], {}, { taskid: 'a' }));
    // @ts-expect-error — an option kq would not apply
    check(() => new Signature('py.add', [], {}, { retry_policy: {} }));
    // @ts-expect-error — set() takes kq's names
    check(() => add.s(1, 2).set({ bogus: 1 }));
    // @ts-expect-error — and so does applyAsync
    check(() => add.s(1, 2).applyAsync([], {}, { task_idd: 'a' }));
    // @ts-expect-error — and app.signature
    check(() => app.signature('py.add', [], {}, { routingkey: 'r' }));
    expect(true).toBe(true);
  });
});
