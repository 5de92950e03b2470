import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { App } from '../src/app/app';
import { bindArguments, parseParameters, type TaskParameter } from '../src/task/task-arguments';

const bind = (params: string[] | undefined, args: unknown[], kwargs: Record<string, unknown> = {}): readonly unknown[] =>
  bindArguments('add', params ? parseParameters('proj.add', params) : undefined, args, kwargs);

describe('binding keyword arguments as Python does', () => {
  it('binds positionals first, then keywords by name', () => {
    expect(bind(['x', 'y'], [], { x: 2, y: 5 })).toEqual([2, 5]);
    expect(bind(['x', 'y'], [2], { y: 5 })).toEqual([2, 5]);
    expect(bind(['x', 'y?'], [], { x: 1 })).toEqual([1]);
    expect(bind(['x', 'y?', 'z?'], [1], { z: 3 })).toEqual([1, undefined, 3]);
  });

  it("fails with Python's TypeError wording", () => {
    expect(() => bind(['x', 'y'], [1], { z: 2 })).toThrow(new TypeError("add() got an unexpected keyword argument 'z'"));
    expect(() => bind(['x', 'y'], [1], { x: 2, y: 3 })).toThrow(new TypeError("add() got multiple values for argument 'x'"));
    expect(() => bind(['x', 'y'], [1])).toThrow(new TypeError("add() missing 1 required positional argument: 'y'"));
    expect(() => bind(['x', 'y'], [])).toThrow(new TypeError("add() missing 2 required positional arguments: 'x' and 'y'"));
    expect(() => bind(['x', 'y', 'z'], [])).toThrow(new TypeError("add() missing 3 required positional arguments: 'x', 'y', and 'z'"));
    expect(() => bind(['x', 'y'], [1, 2, 3])).toThrow(new TypeError('add() takes 2 positional arguments but 3 were given'));
    expect(() => bind(['x', 'y?'], [1, 2, 3])).toThrow(new TypeError('add() takes from 1 to 2 positional arguments but 3 were given'));
    expect(() => bind(['x'], [1, 2])).toThrow(new TypeError('add() takes 1 positional argument but 2 were given'));
  });

  it('refuses keyword arguments a task without declared parameters cannot place (never a silent undefined)', () => {
    expect(bind(undefined, [1, 2])).toEqual([1, 2]);
    expect(() => bind(undefined, [], { x: 1 })).toThrow(/^add\(\) got an unexpected keyword argument 'x' \(.*params: \['x'\]/);
  });

  it('refuses malformed declarations', () => {
    expect(() => parseParameters('t', ['x?', 'y'])).toThrow(/follows an optional one/);
    expect(() => parseParameters('t', ['x', 'x'])).toThrow(/twice/);
    expect(() => parseParameters('t', ['1x'])).toThrow(/not a name/);
  });

  it('property: any split of a full call into positionals and keywords binds every value to its position', () => {
    const names = fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9_]{0,5}$/), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(names, fc.nat(), fc.nat(), fc.array(fc.boolean(), { maxLength: 6 }), (declared, requiredSeed, splitSeed, given) => {
        const required = requiredSeed % (declared.length + 1);
        const params: TaskParameter[] = declared.map((name, i) => ({ name, optional: i >= required }));
        const split = splitSeed % (declared.length + 1);
        // Every required parameter gets a value; an optional one only when `given` says so.
        const values = declared.map((name, i) => (i < required || given[i] ? `v:${name}` : undefined));
        const positional = values.slice(0, split);
        if (positional.includes(undefined)) return; // positionals cannot skip a parameter
        const kwargs: Record<string, unknown> = {};
        for (let i = split; i < declared.length; i++) if (values[i] !== undefined) kwargs[declared[i] as string] = values[i];
        const bound = bindArguments('f', params, positional, kwargs);
        for (let i = 0; i < declared.length; i++) expect(bound[i]).toBe(values[i]);
        // The same call plus a name that is not a parameter, or a keyword repeating a positional, is a TypeError.
        expect(() => bindArguments('f', params, positional, { ...kwargs, zz_unknown: 1 })).toThrow(TypeError);
        if (split > 0) expect(() => bindArguments('f', params, positional, { ...kwargs, [declared[0] as string]: 1 })).toThrow(/multiple values/);
      }),
    );
  });

  it('types keyword arguments by the declared names and the positional types (checked by tsc)', () => {
    const app = new App('types');
    const _add = app.task('types.add', (_ctx, x: number, y: number) => x + y, { params: ['x', 'y'] });
    type Options = NonNullable<Parameters<typeof _add.applyAsync>[1]>;
    const fine: Options = { kwargs: { x: 1, y: 2 }, countdown: 1 };
    // @ts-expect-error -- add has no parameter z
    const wrongName: Options = { kwargs: { z: 1 } };
    // @ts-expect-error -- x is a number
    const wrongType: Options = { kwargs: { x: 'one' } };
    expect([fine, wrongName, wrongType]).toHaveLength(3);
  });
});
