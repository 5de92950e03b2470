import { KqError } from '@kq/core';

/** How a command's positional words map to its named arguments (Celery's `Panel.meta`: `args` then `variadic`). */
export interface RemoteCommandSpec {
  readonly kind: 'inspect' | 'control';
  readonly help: string;
  readonly args?: ReadonlyArray<readonly [name: string, convert: (text: string) => unknown]>;
  readonly variadic?: string;
  /** Celery's `signature` line, as `celery control --help` shows it. */
  readonly signature?: string;
}

const text = (value: string): string => value;
const float = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n)) throw new KqError(`${JSON.stringify(value)} is not a number.`);
  return n;
};
const int = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new KqError(`${JSON.stringify(value)} is not a whole number.`);
  return n;
};
const bool = (value: string): boolean => /^(1|y|yes|t|true|on)$/i.test(value);

/**
 * Celery 5's remote-control commands, by the CLI that sends them (`celery inspect` / `celery control`), with their
 * argument signatures — so `kq control rate_limit proj.add 10/m` sends what `celery control` sends, and a typo is
 * refused here instead of broadcast to a fleet that ignores it.
 */
export const REMOTE_COMMANDS: Readonly<Record<string, RemoteCommandSpec>> = {
  active: { kind: 'inspect', help: 'List of tasks currently being executed.' },
  active_queues: { kind: 'inspect', help: 'List the task queues a worker is currently consuming from.' },
  clock: { kind: 'inspect', help: 'Get current logical clock value.' },
  conf: { kind: 'inspect', help: 'List configuration.', args: [['with_defaults', bool]], signature: '[include_defaults=False]' },
  hello: { kind: 'inspect', help: 'Request mingle sync-data.', args: [['from_node', text], ['revoked', text]], signature: '<from_node> [revoked]' },
  memdump: { kind: 'inspect', help: 'Dump statistics of previous memsample requests.', args: [['samples', int]], signature: '[n_samples=10]' },
  memsample: { kind: 'inspect', help: 'Sample current RSS memory usage.' },
  objgraph: { kind: 'inspect', help: 'Create graph of uncollected objects (memory-leak debugging).', args: [['type', text], ['num', int], ['max_depth', int]], signature: '[object_type=Request] [num=200 [max_depth=10]]' },
  ping: { kind: 'inspect', help: 'Ping worker(s).' },
  query_task: { kind: 'inspect', help: 'Query for task information by id.', variadic: 'ids', signature: '[id1 [id2 [... [idN]]]]' },
  registered: { kind: 'inspect', help: 'List of registered tasks.', variadic: 'taskinfoitems', signature: '[attr1 [attr2 [... [attrN]]]]' },
  report: { kind: 'inspect', help: 'Information about the worker software and platform.' },
  reserved: { kind: 'inspect', help: 'List of currently reserved tasks, not including scheduled/active.' },
  revoked: { kind: 'inspect', help: 'List of revoked task-ids.' },
  scheduled: { kind: 'inspect', help: 'List of currently scheduled ETA/countdown tasks.' },
  stats: { kind: 'inspect', help: 'Request worker statistics/information.' },
  add_consumer: {
    kind: 'control',
    help: 'Tell worker(s) to consume from task queue by name.',
    args: [['queue', text], ['exchange', text], ['exchange_type', text], ['routing_key', text]],
    signature: '<queue> [exchange [type [routing_key]]]',
  },
  autoscale: { kind: 'control', help: 'Modify autoscale settings.', args: [['max', int], ['min', int]], signature: '[max [min]]' },
  cancel_consumer: { kind: 'control', help: 'Tell worker(s) to stop consuming from task queue by name.', args: [['queue', text]], signature: '<queue>' },
  disable_events: { kind: 'control', help: 'Tell worker(s) to stop sending task-related events.' },
  election: { kind: 'control', help: 'Hold election.', args: [['id', text], ['topic', text], ['action', text]], signature: '<id> <topic> <action>' },
  enable_events: { kind: 'control', help: 'Tell worker(s) to send task-related events.' },
  heartbeat: { kind: 'control', help: 'Tell worker(s) to send event heartbeat immediately.' },
  pool_grow: { kind: 'control', help: 'Grow pool by n processes/threads.', args: [['n', int]], signature: '[N=1]' },
  pool_restart: { kind: 'control', help: 'Restart execution pool.' },
  pool_shrink: { kind: 'control', help: 'Shrink pool by n processes/threads.', args: [['n', int]], signature: '[N=1]' },
  rate_limit: {
    kind: 'control',
    help: 'Tell worker(s) to modify the rate limit for a task by type.',
    args: [['task_name', text], ['rate_limit', text]],
    signature: '<task_name> <rate_limit (e.g., 5/s | 5/m | 5/h)>',
  },
  revoke: { kind: 'control', help: 'Revoke task by task id (or list of ids).', variadic: 'task_id', signature: '[id1 [id2 [... [idN]]]]' },
  shutdown: { kind: 'control', help: 'Shutdown worker(s).' },
  terminate: { kind: 'control', help: 'Terminate task by task id (or list of ids).', args: [['signal', text]], variadic: 'task_id', signature: '<signal> [id1 [id2 [... [idN]]]]' },
  time_limit: {
    kind: 'control',
    help: 'Tell worker(s) to modify the time limit for task by type.',
    args: [['task_name', text], ['soft', float], ['hard', float]],
    signature: '<task_name> <soft_secs> [hard_secs]',
  },
};

/** Celery's older names, which its workers still answer to. */
const ALIASES: Readonly<Record<string, string>> = {
  dump_active: 'active',
  dump_conf: 'conf',
  dump_reserved: 'reserved',
  dump_revoked: 'revoked',
  dump_schedule: 'scheduled',
  dump_tasks: 'registered',
};

/** The spec of `name` for `kind`, or undefined when `kq <kind>` has no such command. */
export function remoteCommand(kind: 'inspect' | 'control', name: string): RemoteCommandSpec | undefined {
  const spec = REMOTE_COMMANDS[ALIASES[name] ?? name];
  return spec?.kind === kind ? spec : undefined;
}

/** The commands of `kind` as `celery <kind> --help` lists them: `name signature  help`. */
export function remoteCommandList(kind: 'inspect' | 'control'): string {
  const rows = Object.entries(REMOTE_COMMANDS)
    .filter(([, spec]) => spec.kind === kind)
    .map(([name, spec]) => [`${name}${spec.signature ? ` ${spec.signature}` : ''}`, spec.help] as const);
  const width = Math.max(...rows.map(([head]) => head.length));
  return rows.map(([head, help]) => `  ${head.padEnd(width)}  ${help}`).join('\n');
}

/** Builds a command's `arguments` from positional words, as Celery's `_compile_arguments` does. */
export function commandArguments(name: string, words: readonly string[]): Record<string, unknown> {
  const spec = REMOTE_COMMANDS[ALIASES[name] ?? name] ?? { kind: 'inspect', help: '' };
  const result: Record<string, unknown> = {};
  let i = 0;
  for (const [arg, convert] of spec.args ?? []) {
    if (i >= words.length) break;
    result[arg] = convert(words[i] as string);
    i++;
  }
  const rest = words.slice(i);
  if (spec.variadic) result[spec.variadic] = rest;
  else if (rest.length > 0) throw new KqError(`${name} takes ${spec.signature ?? 'no arguments'}; got ${rest.join(' ')}.`);
  return result;
}
