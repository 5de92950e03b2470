import { randomUuid, type Exchange, type OutgoingMessage, type Queue } from '@kq/core';
import type { AppContract } from '../contract/app-contract';
import { InvalidTaskError } from '../errors/errors';
import { anonNodename, encodeTaskMessage, parseIsoDate, type EncodeTaskOptions, type SignatureJson } from '../protocol/index';
import type { ApplyOptions, SignatureLike, TaskEmbed } from '../send/apply-options';
import { currentTask } from '../send/current-task';

export type { TaskEmbed };

/** A Celery task message ready to publish, with where it goes. */
export interface PreparedTaskMessage {
  readonly id: string;
  readonly message: OutgoingMessage;
  readonly exchange: Exchange;
  readonly routingKey: string;
  /** The queue to declare before publishing (Celery's maybe_declare), when the route names one. */
  readonly queue: Queue | null;
  /** When the message is due (its `eta`), or null to run at once. */
  readonly eta: Date | null;
}

/**
 * Builds the message `app.sendTaskMessage` publishes — routing, protocol v2 encoding, Celery's defaults — without
 * publishing it, so beat can hand it to a broker-side commit that records state and publishes atomically, and
 * periodic tasks can publish it with the broker's delay.
 */
export function prepareTaskMessage(
  app: AppContract,
  name: string,
  args: readonly unknown[],
  options: ApplyOptions = {},
  nowMs: number = Date.now(),
  embed: TaskEmbed = {},
): PreparedTaskMessage {
  const id = options.taskId ?? randomUuid();
  // Sent from inside a running task: its child, as Celery links them.
  const parent = options.parentId === undefined || options.rootId === undefined ? currentTask() : undefined;
  const kwargs = options.kwargs ?? {};
  // The options carry the route fields (queue, exchange, routingKey, priority) under the router's names.
  const route = app.router.route(options.routeName ?? name, args, kwargs, options);
  const zone = app.conf.timezone;
  const eta =
    options.eta !== undefined ? toDate(options.eta, zone) : options.countdown !== undefined ? secondsFrom(nowMs, options.countdown, 'countdown') : null;
  const expires =
    options.expires === undefined ? null : typeof options.expires === 'number' ? secondsFrom(nowMs, options.expires, 'expires') : toDate(options.expires, zone);
  const encodeOptions: EncodeTaskOptions = {
    serializer: options.serializer ?? app.conf.taskSerializer,
    deliveryMode: app.conf.taskDefaultDeliveryMode,
    origin: anonNodename(),
  };
  const compression = options.compression ?? app.conf.taskCompression;
  if (compression) encodeOptions.compression = compression;
  if (expires !== null) encodeOptions.now = new Date(nowMs);
  const message = encodeTaskMessage(
    {
      id,
      name,
      // Serialized before this returns, so the caller's array is read, never kept.
      args: args as unknown[],
      kwargs,
      eta,
      expires,
      retries: options.retries ?? 0,
      timeLimit: options.timeLimit ?? null,
      softTimeLimit: options.softTimeLimit ?? null,
      rootId: options.rootId ?? parent?.request.rootId ?? parent?.request.id ?? id,
      parentId: options.parentId ?? parent?.request.id ?? null,
      group: options.groupId ?? null,
      groupIndex: options.groupIndex ?? null,
      shadow: options.shadow ?? null,
      ignoreResult: options.ignoreResult ?? false,
      callbacks: embed.callbacks ?? signaturesJson(options.link),
      errbacks: embed.errbacks ?? signaturesJson(options.linkError),
      chain: options.chain ? [...options.chain] : null,
      chord: embed.chord ?? null,
      headers: options.headers ?? {},
      ...(options.replacedTaskNesting ? { replacedTaskNesting: options.replacedTaskNesting } : {}),
      ...(options.stamps ? { stamps: options.stamps } : {}),
      replyTo: options.replyTo ?? app.threadOid,
      priority: route.priority,
    },
    encodeOptions,
  );
  return { id, message, exchange: route.exchange, routingKey: route.routingKey, queue: route.queue, eta };
}

function toDate(value: Date | string, zone: string): Date {
  return value instanceof Date ? value : parseIsoDate(value, zone);
}

/** The JSON form of `link`/`linkError` signatures. */
export function signaturesJson(value: SignatureLike | readonly SignatureLike[] | undefined): SignatureJson[] | null {
  if (value === undefined) return null;
  const list = Array.isArray(value) ? (value as readonly SignatureLike[]) : [value as SignatureLike];
  return list.map((signature) => signature.toJSON());
}

/** `seconds` after `nowMs` as a Date, refusing what no Celery worker can read (Python datetimes end in year 9999). */
function secondsFrom(nowMs: number, seconds: number, option: 'countdown' | 'expires'): Date {
  const date = new Date(nowMs + seconds * 1000);
  const year = date.getUTCFullYear();
  if (!Number.isFinite(seconds) || Number.isNaN(date.getTime()) || year < 1 || year > 9999) {
    throw new InvalidTaskError(
      `The ${option} (${seconds} seconds) gives a date no worker can read (Python datetimes cover the years 1 to 9999). ` +
        `Give a ${option} that ends before the year 10000, or none.`,
    );
  }
  return date;
}
