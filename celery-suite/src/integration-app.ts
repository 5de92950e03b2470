/**
 * The tasks of Celery's `t/integration/tasks.py`, written as a kq app under the same names, so Celery's own
 * integration suite can run against a kq worker. Each task does what its Python twin does, step for step; where
 * Python semantics matter (`x + y` on lists or strings, `sum`, `"%s" % None`) they are spelled out.
 *
 * Configured by environment, as upstream's conftest is: TEST_BROKER, TEST_BACKEND, REDIS_HOST and REDIS_PORT; and by
 * the harness's KQ_SUITE_CELERY_CONFIG (Celery settings as JSON, the ones the run's client and Python worker get too).
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleepFor } from 'node:timers/promises';
import { Redis } from 'ioredis';
import {
  App,
  Chain,
  Chord,
  Group,
  PythonException,
  Signature,
  SoftTimeLimitExceeded,
  chain,
  group,
  type AnySignature,
  type ErrbackRequest,
  type SignatureJson,
  type TaskContext,
} from '@kq/worker';
import { signingSettings, trustTestCertificates } from './suite-signing';

const MODULE = 't.integration.tasks';

/** test_security.py: the worker's own key and certificate (made by the runner), and the folder of the test's. */
const signingDir = process.env['KQ_SUITE_SIGNING_DIR'];
const ownCertificate = signingDir ? { key: join(signingDir, 'worker-own.key'), certificate: join(signingDir, 'worker-own.pem') } : undefined;

export const app = new App('celery_suite', {
  broker: process.env['TEST_BROKER'] ?? 'redis://127.0.0.1:6379/1',
  backend: process.env['TEST_BACKEND'] ?? 'redis://127.0.0.1:6379/1',
  // As the version's conftest configures its client (5.5+ sets result_extended).
  resultExtended: process.env['KQ_SUITE_RESULT_EXTENDED'] === '1',
  ...(JSON.parse(process.env['KQ_SUITE_CELERY_CONFIG'] ?? '{}') as Record<`${string}_${string}`, unknown>),
  ...(ownCertificate ? signingSettings(ownCertificate) : {}),
});
if (ownCertificate) trustTestCertificates(ownCertificate, process.env['TMPDIR'] ?? '/tmp');

/** Upstream's `get_redis_connection()`: `StrictRedis(host=REDIS_HOST, port=REDIS_PORT)`, database 0. */
let redisConnection: Redis | undefined;
function redis(): Redis {
  const port = Number(process.env['REDIS_PORT'] ?? '6379');
  redisConnection ??= new Redis({ host: process.env['REDIS_HOST'] ?? '127.0.0.1', port, lazyConnect: false, maxRetriesPerRequest: 3 });
  return redisConnection;
}

/** Upstream's `ExpectedException`: a class the Python caller imports, so `pytest.raises(ExpectedException)` matches. */
function expectedException(...args: unknown[]): PythonException {
  return new PythonException(MODULE, 'ExpectedException', args);
}

/** Python's `x + y` for what JSON carries: numbers add, strings and lists concatenate. */
function pythonAdd(x: unknown, y: unknown): unknown {
  if (typeof x === 'number' && typeof y === 'number') return x + y;
  if (typeof x === 'string' && typeof y === 'string') return x + y;
  if (Array.isArray(x) && Array.isArray(y)) return [...(x as unknown[]), ...(y as unknown[])];
  throw new TypeError(`unsupported operand type(s) for +: '${pythonTypeName(x)}' and '${pythonTypeName(y)}'`);
}

function pythonSum(numbers: unknown): unknown {
  if (!Array.isArray(numbers)) throw new TypeError(`'${pythonTypeName(numbers)}' object is not iterable`);
  return (numbers as unknown[]).reduce<unknown>((total, value) => pythonAdd(total, value), 0);
}

function pythonTypeName(value: unknown): string {
  if (value === null || value === undefined) return 'NoneType';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  if (typeof value === 'string') return 'str';
  if (typeof value === 'boolean') return 'bool';
  return 'dict';
}

/** Python's truthiness, for `if z:` and `if return_value:`. */
function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (value !== null && typeof value === 'object') return Object.keys(value).length > 0;
  return Boolean(value);
}

/** `time.sleep` that a soft time limit interrupts, as SoftTimeLimitExceeded interrupts Python's. */
async function sleepSeconds(ctx: TaskContext, seconds: number): Promise<void> {
  try {
    await sleepFor(seconds * 1000, undefined, { signal: ctx.signal });
  } catch (error) {
    if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new SoftTimeLimitExceeded('soft time limit exceeded');
    throw error;
  }
}

function positiveNumber(value: unknown, fallback: number): number {
  return typeof value === 'number' ? value : fallback;
}

export const identity = app.task(`${MODULE}.identity`, (_ctx, x: unknown) => x, { params: ['x'] });

export const add = app.task(`${MODULE}.add`, (_ctx, x: unknown, y: unknown, z?: unknown) => (truthy(z) ? pythonAdd(pythonAdd(x, y), z) : pythonAdd(x, y)), {
  params: ['x', 'y', 'z?'],
});

app.task(
  `${MODULE}.write_to_file_and_return_int`,
  (_ctx, fileName: string, i: number) => {
    appendFileSync(fileName, `${i}\n`);
    return i;
  },
  { params: ['file_name', 'i'] },
);

app.task(`${MODULE}.add_not_typed`, (_ctx, x: unknown, y: unknown) => pythonAdd(x, y), { params: ['x', 'y'] });

app.task(`${MODULE}.add_ignore_result`, (_ctx, x: unknown, y: unknown) => pythonAdd(x, y), { params: ['x', 'y'], ignoreResult: true });

export const raiseError = app.task(
  `${MODULE}.raise_error`,
  () => {
    throw new PythonException('builtins', 'ValueError', ['deliberate error']);
  },
  { rawArguments: true },
);

app.task(
  `${MODULE}.chain_add`,
  async (_ctx, x: unknown, y: unknown) => {
    await chain(add.s(x, x), add.s(y)).applyAsync();
    return null;
  },
  { params: ['x', 'y'] },
);

app.task(
  `${MODULE}.chord_add`,
  async (_ctx, x: unknown, y: unknown) => {
    await new Chord([add.s(x, x)], add.s(y), {}, app).applyAsync();
    return null;
  },
  { params: ['x', 'y'] },
);

app.task(
  `${MODULE}.delayed_sum`,
  async (ctx, numbers: unknown, pauseTime?: unknown) => {
    await sleepSeconds(ctx, positiveNumber(pauseTime, 1));
    return pythonSum(numbers);
  },
  { params: ['numbers', 'pause_time?'] },
);

app.task(
  `${MODULE}.delayed_sum_with_soft_guard`,
  async (ctx, numbers: unknown, pauseTime?: unknown) => {
    try {
      await sleepSeconds(ctx, positiveNumber(pauseTime, 1));
      return pythonSum(numbers);
    } catch (error) {
      if (error instanceof SoftTimeLimitExceeded) return 0;
      throw error;
    }
  },
  { params: ['numbers', 'pause_time?'] },
);

export const tsum = app.task(`${MODULE}.tsum`, (_ctx, nums: unknown) => pythonSum(nums), { params: ['nums'] });

app.task(`${MODULE}.add_replaced`, (ctx, x: unknown, y: unknown) => ctx.replace(add.s(x, y)), { params: ['x', 'y'] });

/** `replace_with_chain(self, *args, link_msg=None)`. */
function linkSignature(ctx: TaskContext): AnySignature {
  const linkMsg = ctx.request.kwargs['link_msg'];
  const link = redisEcho.s();
  if (linkMsg !== undefined && linkMsg !== null) {
    link.args = [linkMsg];
    link.setImmutable(true);
  }
  return link as AnySignature;
}

app.task(
  `${MODULE}.replace_with_chain`,
  (ctx, ...args: unknown[]) => {
    const c = chain(identity.s(...args), identity.s());
    c.link(linkSignature(ctx));
    return ctx.replace(c);
  },
  { rawArguments: true },
);

app.task(
  `${MODULE}.replace_with_chain_which_raises`,
  (ctx, ...args: unknown[]) => {
    const c = new Chain([identity.s(...args), raiseError.s()], {}, app);
    c.linkError(linkSignature(ctx));
    return ctx.replace(c);
  },
  { rawArguments: true },
);

app.task(`${MODULE}.replace_with_empty_chain`, (ctx) => ctx.replace(new Chain([], {}, app)), { rawArguments: true });

app.task(
  `${MODULE}.add_to_all`,
  (ctx, nums: unknown[], val: unknown) => ctx.replace(group(nums.map((num) => add.s(num, val)))),
  { params: ['nums', 'val'] },
);

app.task(
  `${MODULE}.add_to_all_to_chord`,
  async (ctx, nums: unknown[], val: unknown) => {
    for (const num of nums) await ctx.addToChord(add.s(num, val));
    return 0;
  },
  { params: ['nums', 'val'] },
);

app.task(
  `${MODULE}.add_chord_to_chord`,
  async (ctx, nums: unknown[], val: unknown) => {
    await ctx.addToChord(chain(group(nums.map((num) => add.s(num, val))), tsum.s()));
    return 0;
  },
  { params: ['nums', 'val'] },
);

app.task(
  `${MODULE}.print_unicode`,
  (ctx, logMessage?: string, printMessage?: string) => {
    ctx.log.warning(logMessage ?? 'håå®ƒ valmuefrø');
    console.log(printMessage ?? 'hiöäüß');
    return null;
  },
  { params: ['log_message?', 'print_message?'] },
);

app.task(`${MODULE}.return_exception`, (_ctx, e: unknown) => [e, true], { params: ['e'] });

app.task(
  `${MODULE}.sleeping`,
  async (ctx, i: number) => {
    await sleepSeconds(ctx, i);
    return null;
  },
  { rawArguments: true },
);

app.task(`${MODULE}.ids`, (ctx, i: unknown) => [ctx.request.rootId, ctx.request.parentId, i], { params: ['i'] });

app.task(`${MODULE}.collect_ids`, (ctx, res: unknown, i: unknown) => [res, [ctx.request.rootId, ctx.request.parentId, i]], { params: ['res', 'i'] });

/** `retry`'s `self.attempt`: Python keeps it on the task object, which lives as long as the worker process. */
let retryAttempt: number | undefined;
app.task(
  `${MODULE}.retry`,
  (ctx, returnValue?: unknown) => {
    if (truthy(returnValue)) {
      const attempt = retryAttempt ?? 0;
      console.log('attempt', attempt);
      if (attempt >= 3) {
        retryAttempt = undefined;
        return returnValue;
      }
      retryAttempt = attempt + 1;
    }
    return ctx.retry({ exc: expectedException(), countdown: 5 });
  },
  { params: ['return_value?'], defaultRetryDelay: 1 },
);

/** `retry_once(self, *args, expires=60.0, max_retries=1, countdown=0.1)`. */
function retryOnceOptions(ctx: TaskContext): { countdown: number; maxRetries: number } {
  const { kwargs } = ctx.request;
  return { countdown: positiveNumber(kwargs['countdown'], 0.1), maxRetries: positiveNumber(kwargs['max_retries'], 1) };
}

app.task(
  `${MODULE}.retry_once`,
  (ctx) => (ctx.request.retries ? ctx.request.retries : ctx.retry(retryOnceOptions(ctx))),
  { rawArguments: true, expires: 60, maxRetries: 1 },
);

app.task(
  `${MODULE}.retry_once_priority`,
  (ctx) => (ctx.request.retries ? ctx.request.priority : ctx.retry(retryOnceOptions(ctx))),
  { rawArguments: true, expires: 60, maxRetries: 1 },
);

export const redisEcho = app.task(
  `${MODULE}.redis_echo`,
  async (_ctx, message: unknown, redisKey?: string) => {
    await redis().rpush(redisKey ?? 'redis-echo', String(message));
    return null;
  },
  { params: ['message', 'redis_key?'] },
);

async function redisCount(redisKey = 'redis-count'): Promise<void> {
  await redis().incr(redisKey);
}

app.task(
  `${MODULE}.redis_count`,
  async (_ctx, redisKey?: string) => {
    await redisCount(redisKey);
    return null;
  },
  { params: ['redis_key?'] },
);

/** An immutable signature by name (the two tasks below replace themselves with each other). */
function immutableByName(name: string, kwargs: Record<string, unknown>): AnySignature {
  return new Signature(`${MODULE}.${name}`, [], kwargs, {}, true, null, app);
}

app.task(
  `${MODULE}.second_order_replace1`,
  async (ctx, state?: boolean) => {
    if (!state) {
      await redis().rpush('redis-echo', 'In A');
      return ctx.replace(new Chain([new Signature(`${MODULE}.second_order_replace2`, [], {}, {}, false, null, app), immutableByName('second_order_replace1', { state: true })], {}, app));
    }
    await redis().rpush('redis-echo', 'Out A');
    return null;
  },
  { params: ['state?'] },
);

app.task(
  `${MODULE}.second_order_replace2`,
  async (ctx, state?: boolean) => {
    if (!state) {
      await redis().rpush('redis-echo', 'In B');
      return ctx.replace(new Chain([redisEcho.s('In/Out C'), immutableByName('second_order_replace2', { state: true })], {}, app));
    }
    await redis().rpush('redis-echo', 'Out B');
    return null;
  },
  { params: ['state?'] },
);

app.task(
  `${MODULE}.build_chain_inside_task`,
  async () => {
    const testChain = chain(add.s(1, 1), add.s(2), group([add.s(3), add.s(4)]), add.s(5));
    return testChain.applyAsync();
  },
  { rawArguments: true },
);

export const fail = app.task(
  `${MODULE}.fail`,
  (_ctx, ...args: unknown[]) => {
    throw expectedException('Task expected to fail', ...args);
  },
  { rawArguments: true },
);

app.task(`${MODULE}.fail_replaced`, (ctx, ...args: unknown[]) => ctx.replace(fail.si(...args)), { rawArguments: true });

/** Python's `"%s" % value` for a priority: None prints as `None`. */
app.task(`${MODULE}.return_priority`, (ctx) => `Priority: ${ctx.request.priority ?? 'None'}`, { rawArguments: true });

/** `self.request.properties`, under Kombu's (snake_case) names, as a Python task returns them. */
app.task(
  `${MODULE}.return_properties`,
  (ctx) => Object.fromEntries(Object.entries(ctx.request.properties).map(([name, value]) => [name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), value])),
  { rawArguments: true },
);

app.task(
  'auto_retry_class_task',
  (ctx) => {
    if (ctx.request.retries) return ctx.request.retries;
    throw new PythonException('builtins', 'ValueError', []);
  },
  { rawArguments: true, autoretryFor: [PythonException], maxRetries: 1, retryBackoff: true },
);

// The signatures returned by these tasks wouldn't actually run (arguments missing): they are only returned.
const nestedSignatures: Record<string, () => AnySignature> = {
  chain_chain: () => new Chain([new Chain([add.s()], {}, app)], {}, app),
  chain_group: () => new Chain([group([add.s()])], {}, app),
  chain_chord: () => new Chain([new Chord([add.s()], add.s(), {}, app)], {}, app),
  group_chain: () => group([new Chain([add.s()], {}, app)]),
  group_group: () => group([group([add.s()])]),
  group_chord: () => group([new Chord([add.s()], add.s(), {}, app)]),
  chord_chain: () => new Chord([new Chain([add.s()], {}, app)], add.s(), {}, app),
  chord_group: () => new Chord(group([add.s()]), add.s(), {}, app),
  chord_chord: () => new Chord([new Chord([add.s()], add.s(), {}, app)], add.s(), {}, app),
};
for (const [kind, build] of Object.entries(nestedSignatures)) {
  app.task(`${MODULE}.return_nested_signature_${kind}`, () => build(), { rawArguments: true });
}

app.task(
  `${MODULE}.rebuild_signature`,
  (_ctx, sigDict: SignatureJson) => {
    const recurse = (sig: unknown): void => {
      if (!(sig instanceof Signature)) throw new TypeError(`${JSON.stringify(sig)} is not a signature object`);
      if (sig instanceof Chain || sig instanceof Group) for (const task of sig.tasks) recurse(task);
      if (sig instanceof Chord) {
        for (const task of sig.header.tasks) recurse(task);
        recurse(sig.body);
      }
    };
    recurse(Signature.fromJSON(sigDict, app));
    return null;
  },
  { params: ['sig_dict'] },
);

app.task(
  `${MODULE}.errback_old_style`,
  async (_ctx, requestId: string) => {
    await redisCount(requestId);
    return requestId;
  },
  { params: ['request_id'] },
);

app.task(
  `${MODULE}.errback_new_style`,
  async (_ctx, request: ErrbackRequest) => {
    await redisCount(request.id);
    return request.id;
  },
  // Python's worker calls it in-process because the function takes (request, exc, tb); kq by this flag.
  { rawArguments: true, errbackWithRequest: true },
);

// Added in Celery 5.5's tasks.py (registered for every version: a 5.2 client never calls them).

app.task(`${MODULE}.mul`, (_ctx, x: number, y: number) => x * y, { params: ['x', 'y'] });

/**
 * `@shared_task(pydantic=True)`: the dict argument is validated as `AddParameterModel` (`x: int`, `y: int`; pydantic
 * accepts an integral float or a numeric string for an int) and the `AddResultModel` returned is stored dumped.
 */
function addPydantic(_ctx: TaskContext, data: unknown): { result: number } {
  const field = (name: 'x' | 'y'): number => {
    const value = data !== null && typeof data === 'object' ? (data as Record<string, unknown>)[name] : undefined;
    const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (typeof number !== 'number' || !Number.isInteger(number)) {
      throw new PythonException('pydantic_core._pydantic_core', 'ValidationError', [`1 validation error for AddParameterModel\n${name}\n  Input should be a valid integer`]);
    }
    return number;
  };
  return { result: field('x') + field('y') };
}
app.task(`${MODULE}.add_pydantic`, addPydantic, { params: ['data'] });
app.task(`${MODULE}.add_pydantic_string_annotations`, addPydantic, { params: ['data'] });

/** `sum(sum(num) if isinstance(num, Iterable) else num for num in nums)`. */
app.task(`${MODULE}.xsum`, (_ctx, nums: unknown[]) => pythonSum(nums.map((num) => (Array.isArray(num) ? pythonSum(num) : num))), { params: ['nums'] });

/**
 * Upstream's UnpickleableException(foo, bar), whose args are `(foo,)`, does not survive pickling (its `__init__` needs
 * `bar`), so a Python worker stores it as Celery's `get_pickleable_exception` wraps it: an UnpickleableExceptionWrapper
 * of (module, class name, args, repr), which the client's tests expect.
 */
function unpickleableException(foo: unknown): PythonException {
  const repr = `UnpickleableException(${typeof foo === 'string' ? `'${foo}'` : JSON.stringify(foo)})`;
  return new PythonException('celery.utils.serialization', 'UnpickleableExceptionWrapper', [MODULE, 'UnpickleableException', [foo], repr]);
}

app.task(
  `${MODULE}.retry_unpickleable`,
  (ctx, foo: unknown) => {
    const retryKwargs = (ctx.request.kwargs['retry_kwargs'] ?? {}) as { countdown?: number; max_retries?: number };
    return ctx.retry({
      exc: unpickleableException(foo),
      ...(retryKwargs.countdown !== undefined ? { countdown: retryKwargs.countdown } : {}),
      ...(retryKwargs.max_retries !== undefined ? { maxRetries: retryKwargs.max_retries } : {}),
    });
  },
  { rawArguments: true, defaultRetryDelay: 1 },
);

app.task(
  `${MODULE}.fail_unpickleable`,
  (_ctx, foo: unknown) => {
    throw unpickleableException(foo);
  },
  { params: ['foo', 'bar'] },
);

app.task(
  `${MODULE}.retry_once_headers`,
  (ctx) => (ctx.request.retries ? ctx.request.headers : ctx.retry(retryOnceOptions(ctx))),
  { rawArguments: true, maxRetries: 1 },
);

app.task(
  `${MODULE}.redis_echo_group_id`,
  async (ctx, _previous: unknown, redisKey?: string) => {
    await redis().rpush(redisKey ?? 'redis-group-ids', ctx.request.group ?? 'None');
    return null;
  },
  { params: ['_', 'redis_key?'] },
);

app.task(`${MODULE}.replaced_with_me`, () => true, { rawArguments: true });

app.task(`${MODULE}.soft_time_limit_must_exceed_time_limit`, () => null, { rawArguments: true, softTimeLimit: 2, timeLimit: 1 });
