import { KqError } from '@kq/core';

/** One declared parameter of a task: `'x'` is required, `'x?'` has a default in the function. */
export interface TaskParameter {
  readonly name: string;
  readonly optional: boolean;
}

/** A declared parameter name without its `?`. */
export type ParameterName<P extends string> = P extends `${infer Name}?` ? Name : P;

/**
 * The keyword arguments a task with declared parameters `N` and positional types `A` takes: each name typed as the
 * argument in its position, all optional (any of them may come positionally instead).
 */
export type KwargsOf<N extends readonly string[], A extends readonly unknown[]> = {
  [K in keyof N as K extends `${number}` ? ParameterName<N[K] & string> : never]?: K extends keyof A ? A[K] : unknown;
};

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** Reads `params` as a task declares them; a name out of shape, a duplicate or a required one after an optional one is refused. */
export function parseParameters(task: string, params: readonly string[]): TaskParameter[] {
  const parsed = params.map((raw) => ({ name: raw.endsWith('?') ? raw.slice(0, -1) : raw, optional: raw.endsWith('?') }));
  const seen = new Set<string>();
  let optionalSeen = false;
  for (const { name, optional } of parsed) {
    if (!IDENTIFIER.test(name)) throw new KqError(`Task ${task}: parameter ${JSON.stringify(name)} is not a name (params: ['x', 'y?'], '?' marks one with a default).`);
    if (seen.has(name)) throw new KqError(`Task ${task}: parameter ${JSON.stringify(name)} is declared twice.`);
    if (optionalSeen && !optional) throw new KqError(`Task ${task}: required parameter ${JSON.stringify(name)} follows an optional one, as Python does not allow either.`);
    seen.add(name);
    optionalSeen ||= optional;
  }
  return parsed;
}

/**
 * Binds a call's positional and keyword arguments to the task function's parameters as Python binds them to
 * `def name(x, y=…)`: positionals first, then keywords by name. A call that does not fit throws the `TypeError`
 * Python would raise, with Python's wording (stored as `builtins.TypeError`, so a Python caller sees what a Python
 * worker would have told it). Without declared parameters the positionals go through as they are and keyword
 * arguments cannot be placed, which is a `TypeError` too — never a silently missing argument.
 */
export function bindArguments(
  functionName: string,
  params: readonly TaskParameter[] | undefined,
  args: readonly unknown[],
  kwargs: Readonly<Record<string, unknown>>,
): readonly unknown[] {
  const keys = Object.keys(kwargs);
  if (!params) {
    if (keys.length === 0) return args;
    throw new TypeError(
      `${functionName}() got an unexpected keyword argument '${keys[0]}' (the kq task declares no parameter names: ` +
        `add { params: [${keys.map((key) => `'${key}'`).join(', ')}] } to its options to take keyword arguments)`,
    );
  }
  if (keys.length === 0 && args.length >= requiredCount(params) && args.length <= params.length) return args;
  if (args.length > params.length) {
    const required = requiredCount(params);
    const takes = required === params.length ? `${params.length}` : `from ${required} to ${params.length}`;
    throw new TypeError(
      `${functionName}() takes ${takes} positional argument${params.length === 1 && required === 1 ? '' : 's'} but ${args.length} ${args.length === 1 ? 'was' : 'were'} given`,
    );
  }
  const bound: unknown[] = [...args];
  const filled = new Set(params.slice(0, args.length).map((param) => param.name));
  for (const key of keys) {
    const index = params.findIndex((param) => param.name === key);
    if (index < 0) throw new TypeError(`${functionName}() got an unexpected keyword argument '${key}'`);
    if (filled.has(key)) throw new TypeError(`${functionName}() got multiple values for argument '${key}'`);
    bound[index] = kwargs[key];
    filled.add(key);
  }
  const missing = params.filter((param) => !param.optional && !filled.has(param.name)).map((param) => `'${param.name}'`);
  if (missing.length > 0) {
    throw new TypeError(`${functionName}() missing ${missing.length} required positional argument${missing.length === 1 ? '' : 's'}: ${pythonList(missing)}`);
  }
  // Holes left by optional parameters stay undefined, so the function's own defaults apply.
  return bound;
}

function requiredCount(params: readonly TaskParameter[]): number {
  return params.filter((param) => !param.optional).length;
}

/** `'x'`, `'x' and 'y'`, `'x', 'y', and 'z'` — as Python words a missing-arguments TypeError. */
function pythonList(items: readonly string[]): string {
  if (items.length <= 2) return items.join(' and ');
  return `${items.slice(0, -1).join(', ')}, and ${items.at(-1)}`;
}
