import type { ApplyOptions, SignatureLike } from '../send/apply-options';
import { InvalidSignatureOption } from '../errors/errors';
import { formatIsoDate, type SignatureJson } from '../protocol/index';

/** A signature's options as they travel: Celery's `apply_async` keyword names (`task_id`, `routing_key`, `link`...). */
export type WireOptions = Record<string, unknown>;

/**
 * The options a signature takes from TypeScript (`sig.set({...})`, `applyAsync(args, kwargs, options)`,
 * `task.s(...).set(...)`): kq's camelCase names of the Celery `apply_async` options kq applies. Nothing else is
 * accepted — a misspelt or unknown option is a compile error and, from untyped code, an `InvalidSignatureOption` —
 * because an option kq does not apply would otherwise be dropped without a word.
 */
export interface SignatureOptions {
  taskId?: string;
  queue?: string;
  exchange?: string;
  routingKey?: string;
  priority?: number;
  /** Seconds from now. */
  countdown?: number;
  eta?: Date | string;
  /** Seconds from now, or an absolute time. */
  expires?: number | Date | string;
  timeLimit?: number;
  softTimeLimit?: number;
  retries?: number;
  headers?: Record<string, unknown>;
  shadow?: string;
  ignoreResult?: boolean;
  replyTo?: string;
  parentId?: string;
  rootId?: string;
  groupId?: string;
  groupIndex?: number;
  serializer?: string;
  compression?: string;
  link?: SignatureLike | readonly SignatureLike[];
  linkError?: SignatureLike | readonly SignatureLike[];
  /** Record the sent task as a child of the running task (default true). */
  addToParent?: boolean;
  /** Route as if the task had this name (Celery's `route_name`). */
  routeName?: string;
  replacedTaskNesting?: number;
}

/** Each option's Celery name, as it travels in a signature's `options`. */
const WIRE_NAMES = {
  taskId: 'task_id',
  queue: 'queue',
  exchange: 'exchange',
  routingKey: 'routing_key',
  priority: 'priority',
  countdown: 'countdown',
  eta: 'eta',
  expires: 'expires',
  timeLimit: 'time_limit',
  softTimeLimit: 'soft_time_limit',
  retries: 'retries',
  headers: 'headers',
  shadow: 'shadow',
  ignoreResult: 'ignore_result',
  replyTo: 'reply_to',
  parentId: 'parent_id',
  rootId: 'root_id',
  groupId: 'group_id',
  groupIndex: 'group_index',
  serializer: 'serializer',
  compression: 'compression',
  link: 'link',
  linkError: 'link_error',
  addToParent: 'add_to_parent',
  routeName: 'route_name',
  replacedTaskNesting: 'replaced_task_nesting',
} as const satisfies Record<keyof SignatureOptions, string>;

/** The same options under Celery's names (`task_id`, `routing_key`...), as a Python `Signature(..., options=)`. */
export type CelerySignatureOptions = { [K in keyof SignatureOptions as (typeof WIRE_NAMES)[K]]?: SignatureOptions[K] };

/** What `new Signature(task, args, kwargs, options)` takes: each option by kq's name or by Celery's. */
export type SignatureConstructorOptions = SignatureOptions & CelerySignatureOptions;

const BY_NAME: ReadonlyMap<string, string> = new Map([
  ...Object.entries(WIRE_NAMES),
  ...Object.values(WIRE_NAMES).map((wire): [string, string] => [wire, wire]),
]);

/**
 * Options given in kq's names (or Celery's), in Celery's; undefined values dropped, `link`/`link_error` always
 * lists. An option that is neither is refused with `InvalidSignatureOption`, never kept unapplied.
 */
export function toWireOptions(options: Readonly<SignatureConstructorOptions>): WireOptions {
  const wire: WireOptions = {};
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    const name = BY_NAME.get(key);
    if (name === undefined) throw unknownOption(key);
    wire[name] = name === 'link' || name === 'link_error' ? (Array.isArray(value) ? [...(value as unknown[])] : [value]) : value;
  }
  return wire;
}

function unknownOption(key: string): InvalidSignatureOption {
  const folded = key.replace(/_/g, '').toLowerCase();
  const near = Object.keys(WIRE_NAMES).find((name) => name.toLowerCase() === folded);
  const hint = near === undefined ? '' : ` Did you mean ${JSON.stringify(near)}?`;
  return new InvalidSignatureOption(
    `Unknown signature option ${JSON.stringify(key)}.${hint} A signature takes these, by kq's name or Celery's: ` +
      `${Object.entries(WIRE_NAMES)
        .map(([name, wire]) => (name === wire ? name : `${name} (${wire})`))
        .join(', ')}.`,
  );
}

/** Everything in the options in JSON form (signatures serialized, dates as ISO text, as Kombu 5.2 writes them). */
export function wireOptionsJson(options: Readonly<WireOptions>): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    json[key] = jsonValue(value);
  }
  return json;
}

function jsonValue(value: unknown): unknown {
  if (isSignatureLike(value)) return value.toJSON();
  if (Array.isArray(value)) return value.map(jsonValue);
  if (value instanceof Date) return formatIsoDate(value);
  return value;
}

export function isSignatureLike(value: unknown): value is SignatureLike {
  return typeof value === 'object' && value !== null && typeof (value as Partial<SignatureLike>).toJSON === 'function' && !(value instanceof Date);
}

/**
 * A signature's wire options as the send's options (Celery's `apply_async(**options)` → `send_task`): every field
 * Python would apply — routing, timing, limits, ids, callbacks, the remaining chain — and nothing silently dropped.
 * The chord travels in the message's embed (returned apart).
 */
export function applyOptionsFromWire(options: Readonly<WireOptions>, kwargs: Record<string, unknown>): { apply: ApplyOptions; chord: SignatureJson | null } {
  const apply: ApplyOptions = { kwargs };
  const text = (key: string): string | undefined => (typeof options[key] === 'string' ? (options[key] as string) : undefined);
  const count = (key: string): number | undefined => (typeof options[key] === 'number' ? (options[key] as number) : undefined);
  const set = <K extends keyof ApplyOptions>(key: K, value: ApplyOptions[K] | undefined): void => {
    if (value !== undefined) apply[key] = value;
  };
  set('taskId', text('task_id'));
  set('queue', queueName(options['queue']));
  set('exchange', typeof options['exchange'] === 'string' ? options['exchange'] : exchangeName(options['exchange']));
  set('routingKey', text('routing_key'));
  set('priority', count('priority'));
  set('countdown', count('countdown'));
  const eta = options['eta'];
  if (typeof eta === 'string' || eta instanceof Date) apply.eta = eta;
  const expires = options['expires'];
  if (typeof expires === 'number' || typeof expires === 'string' || expires instanceof Date) apply.expires = expires;
  set('timeLimit', count('time_limit'));
  set('softTimeLimit', count('soft_time_limit'));
  set('retries', count('retries'));
  set('shadow', text('shadow'));
  set('replyTo', text('reply_to'));
  set('parentId', text('parent_id'));
  set('rootId', text('root_id'));
  set('groupId', text('group_id'));
  set('groupIndex', count('group_index'));
  set('serializer', text('serializer'));
  set('compression', text('compression'));
  set('replacedTaskNesting', count('replaced_task_nesting'));
  if (typeof options['ignore_result'] === 'boolean') apply.ignoreResult = options['ignore_result'];
  if (isRecord(options['headers'])) apply.headers = options['headers'];
  // A stamped signature (Celery 5.3+) names its stamps in `stamped_headers` and keeps each value as an option.
  const stamped = options['stamped_headers'];
  if (Array.isArray(stamped) && stamped.length > 0) {
    apply.stamps = Object.fromEntries(stamped.filter((header): header is string => typeof header === 'string').map((header) => [header, options[header] ?? null]));
  }
  if (options['add_to_parent'] === false) apply.addToParent = false;
  const link = signatureList(options['link']);
  if (link) apply.link = link;
  const linkError = signatureList(options['link_error']);
  if (linkError) apply.linkError = linkError;
  const chain = signatureList(options['chain']);
  if (chain) apply.chain = chain.map((step) => step.toJSON());
  const chord = options['chord'];
  return { apply, chord: chord === undefined || chord === null ? null : isSignatureLike(chord) ? chord.toJSON() : (chord as SignatureJson) };
}

/** A list option (or one value) as signatures: live ones kept, JSON ones wrapped. */
function signatureList(value: unknown): SignatureLike[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0) return undefined;
  return list.map((item) => (isSignatureLike(item) ? item : { toJSON: () => item as SignatureJson }));
}

/** Celery accepts a queue as a name or a declared Queue (which pickles/serializes to a dict with its name). */
function queueName(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (isRecord(value) && typeof value['name'] === 'string') return value['name'];
  return undefined;
}

function exchangeName(value: unknown): string | undefined {
  return isRecord(value) && typeof value['name'] === 'string' ? value['name'] : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
