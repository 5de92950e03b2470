import type { ResultTuple } from '@kq/core';
import type { LogLevel } from '../log/logger';
import type { SignatureJson } from '../protocol/index';
import type { ApplyOptions } from '../task/task';
import type { TaskRequest } from '../task/task-request';
import type { SerializedError } from './serialized-error';

/*
 * Messages between a child pool and its children (worker threads: structured clone; child processes: core's JSON
 * codec over IPC, so Dates and Buffers survive). One task runs in a child at a time; `id` names a run.
 */

/** What a child needs to load the app: the module, and the parent app's settings that are plain data. */
export interface ChildInit {
  type: 'init';
  appModule: string;
  /** Plain-data entries of the parent app's `conf` (broker, backend...), applied over the module's own. */
  conf: Record<string, unknown>;
  loglevel: LogLevel;
}

export interface RunMessage {
  type: 'run';
  id: number;
  /** The request without `message.args`/`message.kwargs` (the same as `args`/`kwargs`; sent once). */
  request: TaskRequest;
}

/** The parent aborted the task's signal with a reason the task should see (the soft time limit). */
export interface AbortMessage {
  type: 'abort';
  id: number;
  reason: SerializedError;
}

/** Reply to a `publish` relayed for a child whose broker is in-process only (memory://). */
export interface PublishedMessage {
  type: 'published';
  seq: number;
  taskId?: string;
  error?: SerializedError;
}

/** Finish the current work, close the app and exit. */
export interface ShutdownMessage {
  type: 'shutdown';
}

export type ParentMessage = ChildInit | RunMessage | AbortMessage | PublishedMessage | ShutdownMessage;

export interface ReadyMessage {
  type: 'ready';
  pid: number;
  threadId: number;
}

/** The app module could not be loaded: the child exits after sending this. */
export interface StartFailedMessage {
  type: 'start-failed';
  error: SerializedError;
}

export interface LogMessage {
  type: 'log';
  /** The run it belongs to, or null for the child's own lines. */
  id: number | null;
  level: LogLevel;
  logger: string;
  message: string;
}

export interface DoneMessage {
  type: 'done';
  id: number;
  ok: boolean;
  value?: unknown;
  error?: SerializedError;
  /** KiB after the run: RSS for a process, the isolate's used heap for a thread (`maxMemoryPerChild`). */
  memory: number;
  /** The tasks the run sent (result tuples), stored as its result's `children`. */
  children?: ResultTuple[];
}

/** A task message the child wants sent, relayed through the parent because the broker is in-process (memory://). */
export interface PublishMessage {
  type: 'publish';
  seq: number;
  name: string;
  args: unknown[];
  options: ApplyOptions;
  embed: { callbacks?: SignatureJson[] | null; errbacks?: SignatureJson[] | null; chord?: SignatureJson | null };
}

export type ChildMessage = ReadyMessage | StartFailedMessage | LogMessage | DoneMessage | PublishMessage;

/** Env var set in every pool child, so an app module can tell it must not start a worker on import. */
export const POOL_CHILD_ENV = 'KQ_POOL_CHILD';

/** `message.args`/`kwargs` are `args`/`kwargs`: sent once. */
export function wireRequest(request: TaskRequest): TaskRequest {
  return { ...request, message: { ...request.message, args: [], kwargs: {} } };
}

/** The settings a child can receive: plain data only (no routing functions, no class instances but Dates/Buffers). */
export function plainConf(conf: object): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(conf)) if (isPlain(value, 0)) plain[key] = value;
  return plain;
}

function isPlain(value: unknown, depth: number): boolean {
  if (value === null || value === undefined) return true;
  const type = typeof value;
  if (type === 'string' || type === 'boolean') return true;
  if (type === 'number') return Number.isFinite(value);
  if (type !== 'object' || depth > 8) return false;
  if (value instanceof Date || Buffer.isBuffer(value)) return true;
  if (Array.isArray(value)) return value.every((item) => isPlain(item, depth + 1));
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.values(value as Record<string, unknown>).every((item) => isPlain(item, depth + 1));
}
