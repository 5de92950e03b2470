import { parseArgs } from 'node:util';
import { KqError, type MailboxReply } from '@kq/core';
import type { App } from '../app';
import { pythonStr } from '../events/python-str';
import { loadApp } from './load-app';

/** How a command's positional arguments map to its named ones (Celery's `Panel.meta`: `args` then `variadic`). */
interface CommandArguments {
  readonly args?: ReadonlyArray<readonly [name: string, convert: (text: string) => unknown]>;
  readonly variadic?: string;
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

/** Celery's command signatures, so `kq control rate_limit proj.add 10/m` sends what `celery control` sends. */
const COMMAND_ARGUMENTS: Readonly<Record<string, CommandArguments>> = {
  query_task: { variadic: 'ids' },
  registered: { variadic: 'taskinfoitems' },
  dump_tasks: { variadic: 'taskinfoitems' },
  conf: { args: [['with_defaults', bool]] },
  dump_conf: { args: [['with_defaults', bool]] },
  memdump: { args: [['samples', int]] },
  revoke: { variadic: 'task_id' },
  terminate: { args: [['signal', text]], variadic: 'task_id' },
  rate_limit: { args: [['task_name', text], ['rate_limit', text]] },
  time_limit: { args: [['task_name', text], ['soft', float], ['hard', float]] },
  pool_grow: { args: [['n', int]] },
  pool_shrink: { args: [['n', int]] },
  autoscale: { args: [['max', int], ['min', int]] },
  add_consumer: { args: [['queue', text], ['exchange', text], ['exchange_type', text], ['routing_key', text]] },
  cancel_consumer: { args: [['queue', text]] },
};

/** Builds a command's `arguments` from positional words, as Celery's `_compile_arguments` does. */
export function commandArguments(method: string, words: readonly string[]): Record<string, unknown> {
  const meta = COMMAND_ARGUMENTS[method] ?? {};
  const result: Record<string, unknown> = {};
  let i = 0;
  for (const [name, convert] of meta.args ?? []) {
    if (i >= words.length) break;
    result[name] = convert(words[i] as string);
    i++;
  }
  const rest = words.slice(i);
  if (meta.variadic) result[meta.variadic] = rest;
  else if (rest.length > 0) throw new KqError(`${method} takes ${(meta.args ?? []).map(([name]) => `<${name}>`).join(' ') || 'no arguments'}; got ${rest.join(' ')}.`);
  return result;
}

export interface ReplyPrintOptions {
  /** Show each reply's value (inspect/control) or only who answered (status). */
  showReply?: boolean;
  colour?: boolean;
}

/**
 * One reply the way Celery's CLI prints it: `->  <node>: OK` (or `ERROR`), then the value indented — a list as
 * `* item` lines, `{ok: …}`/`{error: …}` unwrapped, other objects as sorted, indented JSON.
 */
export function formatReply(node: string, value: unknown, options: ReplyPrintOptions = {}): string {
  const [status, body] = pretty(value);
  const paint = (code: string, s: string): string => (options.colour ? `\x1b[${code}m${s}\x1b[0m` : s);
  const title = `${paint('1;36', `${node}: `)}${status === 'OK' ? paint('32', 'OK') : paint('31', 'ERROR')}`;
  const head = `${paint('1;37', '->')}  ${title}`;
  return options.showReply ? `${head}\n${indent(body, 4)}` : head;
}

/** `\n<n> node(s) online.` */
export function nodesOnline(count: number): string {
  return `\n${count} ${count === 1 ? 'node' : 'nodes'} online.`;
}

function pretty(value: unknown): ['OK' | 'ERROR', string] {
  if (Array.isArray(value)) return ['OK', value.length === 0 ? '- empty -' : value.map((item) => `* ${pythonStr(item)}`).join('\n')];
  if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if ('ok' in record) return ['OK', indent(pretty(record['ok'])[1], 4)];
    if ('error' in record) return ['ERROR', indent(pretty(record['error'])[1], 4)];
    return ['OK', sortedJson(value)];
  }
  if (typeof value === 'string') return ['OK', value];
  return ['OK', value === null || value === undefined ? 'None' : String(value)];
}

function sortedJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
    4,
  );
}

function indent(textBlock: string, size: number): string {
  const pad = ' '.repeat(size);
  return textBlock
    .split('\n')
    .map((line) => pad + line)
    .join('\n');
}

const remoteOptions = {
  app: { type: 'string', short: 'A' },
  broker: { type: 'string', short: 'b' },
  destination: { type: 'string', short: 'd' },
  timeout: { type: 'string', short: 't' },
  json: { type: 'boolean', short: 'j' },
  args: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * `kq inspect <command> [args…]` and `kq control <command> [args…]`: sends the command to every worker (or `-d`
 * nodes), prints each reply as it arrives like Celery's CLI, then `N nodes online.` — or, with `-j`, the replies as
 * one JSON object. Exit code 69 when nobody replied, as Celery's.
 */
export async function remoteCommand(kind: 'inspect' | 'control', argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: remoteOptions });
  const [method, ...words] = positionals;
  if (!method || values.help) {
    console.log(`Usage: kq ${kind} <command> [arguments...] [-d name@host,...] [-t seconds] [-j] [--args '{...}']`);
    return method ? 0 : 64;
  }
  const app = await loadApp({ app: values.app, broker: values.broker, oneShot: true });
  try {
    const args = { ...commandArguments(method, words), ...(values.args ? parseJsonObject(values.args) : {}) };
    return await broadcastAndPrint(app, method, args, {
      json: values.json ?? false,
      showReply: true,
      ...(values.timeout === undefined ? {} : { timeout: seconds(values.timeout) }),
      ...(values.destination ? { destination: splitNodes(values.destination) } : {}),
    });
  } finally {
    await app.close();
  }
}

/** `kq status`: pings every worker and lists who answered (Celery's `celery status`). */
export async function statusCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: remoteOptions });
  if (values.help) {
    console.log('Usage: kq status [-b url] [-d name@host,...] [-t seconds] [-j]');
    return 0;
  }
  const app = await loadApp({ app: values.app, broker: values.broker, oneShot: true });
  try {
    return await broadcastAndPrint(app, 'ping', {}, {
      json: values.json ?? false,
      showReply: false,
      ...(values.timeout === undefined ? {} : { timeout: seconds(values.timeout) }),
      ...(values.destination ? { destination: splitNodes(values.destination) } : {}),
    });
  } finally {
    await app.close();
  }
}

async function broadcastAndPrint(
  app: App,
  method: string,
  args: Record<string, unknown>,
  options: { json: boolean; showReply: boolean; timeout?: number; destination?: string[] },
): Promise<number> {
  const colour = process.stdout.isTTY === true && !process.env['NO_COLOR'];
  const replies: MailboxReply[] = await app.control.broadcast(method, {
    arguments: args,
    reply: true,
    timeout: options.timeout ?? 1000,
    ...(options.destination ? { destination: options.destination } : {}),
    ...(options.json
      ? {}
      : {
          callback: (reply: MailboxReply) => {
            const node = Object.keys(reply)[0];
            if (node !== undefined) console.log(formatReply(node, reply[node], { showReply: options.showReply, colour }));
          },
        }),
  });
  if (replies.length === 0) {
    console.error('Error: No nodes replied within time constraint');
    return 69;
  }
  if (options.json) console.log(JSON.stringify(Object.assign({}, ...replies)));
  else console.log(nodesOnline(replies.length));
  return 0;
}

function parseJsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new KqError(`--args is not valid JSON: ${value}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new KqError('--args must be a JSON object, e.g. --args \'{"safe": true}\'');
  return parsed as Record<string, unknown>;
}

function splitNodes(value: string): string[] {
  return value
    .split(',')
    .map((node) => node.trim())
    .filter(Boolean);
}

function seconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new KqError(`--timeout must be a positive number of seconds, got ${JSON.stringify(value)}.`);
  return n * 1000;
}
