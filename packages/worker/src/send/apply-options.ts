import type { SignatureJson } from '../protocol/index';

/** A signature, or anything that serializes to one (what `link`/`linkError` take). */
export interface SignatureLike {
  toJSON(): SignatureJson;
}

/** Options for one call (Celery's `apply_async` keyword arguments). */
export interface ApplyOptions {
  kwargs?: Record<string, unknown>;
  taskId?: string;
  /** Seconds from now. */
  countdown?: number;
  eta?: Date | string;
  /** Seconds from now, or an absolute time. */
  expires?: number | Date | string;
  priority?: number;
  queue?: string;
  exchange?: string;
  routingKey?: string;
  retries?: number;
  timeLimit?: number;
  softTimeLimit?: number;
  headers?: Record<string, unknown>;
  /** Tasks to send with this one's return value when it succeeds (signatures, or their JSON form). */
  link?: SignatureLike | readonly SignatureLike[];
  /** Tasks to send with this one's id when it fails. */
  linkError?: SignatureLike | readonly SignatureLike[];
  shadow?: string;
  ignoreResult?: boolean;
  replyTo?: string;
  parentId?: string;
  rootId?: string;
  groupId?: string;
  groupIndex?: number;
  serializer?: string;
  compression?: string;
  /** Remaining chain, in Celery's reversed order. */
  chain?: readonly SignatureJson[];
  /** Route as if the task had this name (Celery's `route_name`: `celery.map` routed by the task it maps). */
  routeName?: string;
  /** Record the sent task as a child of the task running around the send (default true; Celery's `add_to_parent`). */
  addToParent?: boolean;
  /** How many times the task was replaced (`ctx.replace`), Celery's `replaced_task_nesting` header. */
  replacedTaskNesting?: number;
  /** Celery 5.3+ stamps (header → value), sent as the `stamped_headers` and `stamps` headers. */
  stamps?: Record<string, unknown>;
}

/** One call for `app.sendTasks`: a task by name with its arguments and options. */
export interface TaskCall {
  name: string;
  args?: readonly unknown[];
  kwargs?: Record<string, unknown>;
  options?: ApplyOptions;
}

/** Callbacks, errbacks and chord a message carries in its body's embed (a retry carries them over verbatim). */
export interface TaskEmbed {
  callbacks?: SignatureJson[] | null;
  errbacks?: SignatureJson[] | null;
  chord?: SignatureJson | null;
}
