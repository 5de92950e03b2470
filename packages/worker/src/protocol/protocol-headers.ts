/** The headers Celery 5.2 writes for every task, in its order (`AMQP.as_task_v2`, docs/wire.md#headers). */
export const CELERY_52_HEADER_KEYS = [
  'lang',
  'task',
  'id',
  'shadow',
  'eta',
  'expires',
  'group',
  'group_index',
  'retries',
  'timelimit',
  'root_id',
  'parent_id',
  'argsrepr',
  'kwargsrepr',
  'origin',
  'ignore_result',
] as const;

/** Added by Celery ≥5.3 after `ignore_result` (captured from 5.6.3). */
export const CELERY_53_HEADER_KEYS = ['replaced_task_nesting', 'stamped_headers', 'stamps'] as const;

/**
 * Every header with a meaning in the task protocol. These are never custom headers: they are not copied into
 * `TaskMessage.headers` on decode, and custom headers cannot override them on encode. `meth` is documented but unused;
 * `compression` belongs to kombu; `redelivered` is added by kombu's Redis transport when it restores a message.
 */
export const PROTOCOL_HEADER_KEYS: ReadonlySet<string> = new Set<string>([
  ...CELERY_52_HEADER_KEYS,
  ...CELERY_53_HEADER_KEYS,
  'meth',
  'compression',
  'redelivered',
]);

/** The keys of a protocol 2 body's third element, in Celery's order. */
export const EMBED_KEYS = ['callbacks', 'errbacks', 'chain', 'chord'] as const;
