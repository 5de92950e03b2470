import { DecodeError, documentValue, jsonCodec, parseDocument, pyJson, type ResultMeta } from '@kq/core';

/** Fields Celery writes in this order (docs/wire.md#on-redis); anything else goes after them, `task_id` always last. */
const EXTENDED_FIELDS = ['name', 'args', 'kwargs', 'worker', 'retries', 'queue'] as const;
const ORDERED_FIELDS = new Set(['status', 'result', 'traceback', 'children', 'date_done', 'group_id', 'parent_id', ...EXTENDED_FIELDS, 'task_id']);

/**
 * The meta as Celery's Redis backend writes it: its field order (status, result, traceback, children, date_done,
 * [group_id], [parent_id], [extended fields], task_id) and Python's `json.dumps` separators and escaping.
 * Values go through kq's JSON codec first, so dates and bytes become Kombu's `__type__` markers.
 */
export function encodeResultMeta(meta: ResultMeta): string {
  const source = meta as unknown as Record<string, unknown>;
  const ordered: Record<string, unknown> = {
    status: meta.status,
    result: meta.result === undefined ? null : meta.result,
    traceback: meta.traceback ?? null,
    children: meta.children ?? null,
    date_done: meta.date_done ?? null,
  };
  // Celery writes group_id/parent_id only when the request has them.
  if (meta.group_id) ordered['group_id'] = meta.group_id;
  if (meta.parent_id) ordered['parent_id'] = meta.parent_id;
  for (const field of EXTENDED_FIELDS) if (source[field] !== undefined) ordered[field] = source[field];
  for (const [field, value] of Object.entries(source)) if (!ORDERED_FIELDS.has(field) && value !== undefined) ordered[field] = value;
  ordered['task_id'] = meta.task_id;
  // The codec turns dates and bytes into markers; its plain JSON, parsed again, is then re-written the Python way by
  // pyJson: the same text as re-spacing the document itself, in half the time (one result per task).
  const compact = jsonCodec.encode(ordered).toString('utf8');
  return pyJson(JSON.parse(compact));
}

/** Reads a stored or published meta; fills what old or partial writers leave out. */
export function decodeResultMeta(text: string, taskId: string): ResultMeta {
  let value: unknown;
  try {
    // Without a marker the codec's reviver has nothing to do: plain JSON.parse, without the copy into a Buffer.
    value = text.includes('"__type__"') ? jsonCodec.decode(Buffer.from(text, 'utf8')) : JSON.parse(text);
  } catch (error) {
    // Python writes NaN/Infinity literals that JSON.parse refuses; the lenient reader takes them.
    try {
      value = documentValue(parseDocument(text));
    } catch {
      throw new DecodeError(
        `The stored result of task ${taskId} is not JSON (${messageOf(error)}). kq reads results written with ` +
          `result_serializer='json' (Celery's default); set it on the Python side.`,
        { cause: error },
      );
    }
  }
  if (!isRecord(value) || typeof value['status'] !== 'string') {
    throw new DecodeError(`The stored result of task ${taskId} is not a Celery result (no "status" field): ${text.slice(0, 200)}`);
  }
  const traceback = value['traceback'];
  const children = value['children'];
  const dateDone = value['date_done'];
  return {
    ...value,
    status: value['status'] as ResultMeta['status'],
    result: value['result'] === undefined ? null : value['result'],
    traceback: typeof traceback === 'string' ? traceback : null,
    children: Array.isArray(children) ? children : null,
    date_done: typeof dateDone === 'string' ? dateDone : null,
    task_id: typeof value['task_id'] === 'string' ? value['task_id'] : taskId,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
