import type { MessageProperties, SerializerRegistry } from '@kq/core';

/** JSON form of a Celery Signature (celery.canvas.Signature). */
export interface SignatureJson {
  task: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
  options: Record<string, unknown>;
  subtask_type: string | null;
  immutable: boolean;
}

/** A task message, decoded from protocol v2 (or v1) into one normalized shape. */
export interface TaskMessage {
  id: string;
  /** Header `task`: the registered task name. */
  name: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
  eta: Date | null;
  /** The microseconds past the millisecond (1-999) of the sender's `eta` text, which the Date drops; absent when none. */
  etaMicroseconds?: number;
  expires: Date | null;
  retries: number;
  /** Seconds; header `timelimit[0]` (hard). A `0` on the wire means "task default" and decodes to null. */
  timeLimit: number | null;
  /** Seconds; header `timelimit[1]` (soft). A `0` on the wire means "task default" and decodes to null. */
  softTimeLimit: number | null;
  rootId: string | null;
  parentId: string | null;
  group: string | null;
  groupIndex: number | null;
  shadow: string | null;
  origin: string | null;
  argsrepr: string;
  kwargsrepr: string;
  ignoreResult: boolean | null;
  callbacks: SignatureJson[] | null;
  errbacks: SignatureJson[] | null;
  chain: SignatureJson[] | null;
  chord: SignatureJson | null;
  /** Custom headers (apply_async(headers=...)): everything in the headers that is not part of the protocol. */
  headers: Record<string, unknown>;
  /** Property `reply_to` (`''` → null). */
  replyTo: string | null;
  /** Property `correlation_id`, else the id. */
  correlationId: string;
  priority: number | null;
  stamps: Record<string, unknown>;
  replacedTaskNesting: number;
  protocol: 1 | 2;
}

export type TaskMessageInit = Pick<TaskMessage, 'id' | 'name'> & Partial<Omit<TaskMessage, 'id' | 'name' | 'protocol'>>;

export interface EncodeTaskOptions {
  /** Default `'json'`. */
  serializer?: string;
  /** e.g. `'zlib'` → header `compression: 'application/x-gzip'`. */
  compression?: string;
  serializers?: SerializerRegistry;
  /** Default 2 (persistent). */
  deliveryMode?: 1 | 2;
  /** Origin nodename when the init has none, default `gen<pid>@<hostname>` (Celery's anon_nodename). */
  origin?: string;
  /** Emit Celery ≥5.3 headers (replaced_task_nesting, stamped_headers, stamps). Default true. */
  modernHeaders?: boolean;
  /** The time `expires` is measured from for the `expiration` property. Default: the current time. */
  now?: Date;
}

export interface DecodeTaskOptions {
  accept?: readonly string[];
  serializers?: SerializerRegistry;
  /** IANA zone for naive eta/expires, default 'UTC'. */
  timezone?: string;
  /** Most bytes a compressed body may inflate to (the app's `maxMessageSize`); past it, `MessageTooLarge`. */
  maxDecompressedSize?: number;
}

/** What `decodeTaskMessage` reads from a received message (a `Delivery` is one). */
export interface EncodedTaskMessage {
  body: Buffer;
  contentType: string;
  contentEncoding: string;
  headers: Record<string, unknown>;
  properties: MessageProperties;
}
