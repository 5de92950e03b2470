import { InvalidTaskError } from '../errors/errors';
import type { SignatureJson } from './task-message-types';

/**
 * Typed readers for the fields of a received task message. Each one accepts what Python producers send (including
 * `null` for "absent") and throws `InvalidTaskError` naming the field and the task for anything else, so the worker
 * can reject the message with a reason instead of failing later inside a task.
 */
export class MessageFields {
  readonly #subject: string | (() => string);

  /** `subject` describes the message in errors, e.g. `task "proj.add" (id 1234)`; a function is called only then. */
  constructor(subject: string | (() => string)) {
    this.#subject = subject;
  }

  private get subject(): string {
    return typeof this.#subject === 'function' ? this.#subject() : this.#subject;
  }

  fail(what: string): InvalidTaskError {
    return new InvalidTaskError(`Invalid ${this.subject}: ${what}. A worker cannot run the message as sent.`);
  }

  /** A string, or null when absent/null. */
  optionalString(field: string, value: unknown): string | null {
    if (value === undefined || value === null) return null;
    if (typeof value === 'string') return value;
    throw this.fail(`${field} must be a string or null, got ${describeValue(value)}`);
  }

  /** A non-negative integer, or null when absent/null. */
  optionalCount(field: string, value: unknown): number | null {
    if (value === undefined || value === null) return null;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
    throw this.fail(`${field} must be a non-negative integer or null, got ${describeValue(value)}`);
  }

  /** A boolean (Python also sends 0/1 from old clients), or null when absent/null. */
  optionalBoolean(field: string, value: unknown): boolean | null {
    if (value === undefined || value === null) return null;
    if (typeof value === 'boolean') return value;
    if (value === 0 || value === 1) return value === 1;
    throw this.fail(`${field} must be a boolean or null, got ${describeValue(value)}`);
  }

  /**
   * `timelimit` as `[hard, soft]` seconds (docs/wire.md#headers). Absent, null or empty means the task's defaults, and
   * so does a 0 in either place (Python's worker uses `limit or default`).
   */
  timeLimits(value: unknown): [hard: number | null, soft: number | null] {
    if (value === undefined || value === null) return [null, null];
    if (!Array.isArray(value) || (value.length !== 2 && value.length !== 0)) {
      throw this.fail(`timelimit must be a [hard, soft] pair of seconds (numbers or null), got ${describeValue(value)}`);
    }
    if (value.length === 0) return [null, null];
    return [this.#limit('hard', value[0]), this.#limit('soft', value[1])];
  }

  #limit(which: string, value: unknown): number | null {
    if (value === null || value === undefined || value === 0 || value === false) return null;
    if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value;
    throw this.fail(`the ${which} time limit in timelimit must be a positive number of seconds or null, got ${describeValue(value)}`);
  }

  /** A JSON object (not an array), or the fallback when absent/null. */
  object(field: string, value: unknown, fallback: Record<string, unknown> | null): Record<string, unknown> | null {
    if (value === undefined || value === null) return fallback;
    if (isPlainRecord(value)) return value;
    throw this.fail(`${field} must be an object, got ${describeValue(value)}`);
  }

  /** A list of signatures, or null. */
  signatureList(field: string, value: unknown): SignatureJson[] | null {
    if (value === undefined || value === null) return null;
    if (!Array.isArray(value)) throw this.fail(`${field} must be a list of signatures or null, got ${describeValue(value)}`);
    return value.map((item, index) => this.signature(`${field}[${index}]`, item));
  }

  /** One signature: an object with a string `task`; missing parts get Celery's defaults and unknown keys are kept. */
  signature(field: string, value: unknown): SignatureJson {
    if (!isPlainRecord(value) || typeof value.task !== 'string') {
      throw this.fail(`${field} must be a signature object with a string "task", got ${describeValue(value)}`);
    }
    const { args, kwargs, options, subtask_type: subtaskType, immutable } = value;
    if (args !== undefined && args !== null && !Array.isArray(args)) {
      throw this.fail(`${field}.args must be a list, got ${describeValue(args)}`);
    }
    return {
      ...value,
      task: value.task,
      args: Array.isArray(args) ? args : [],
      kwargs: (this.object(`${field}.kwargs`, kwargs, {}) ?? {}),
      options: (this.object(`${field}.options`, options, {}) ?? {}),
      subtask_type: this.optionalString(`${field}.subtask_type`, subtaskType),
      immutable: this.optionalBoolean(`${field}.immutable`, immutable) ?? false,
    };
  }
}

/** A JSON object: a record that is not an array, Buffer, Date or other special object. */
export function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A short description of a received value for error messages (type and a bounded preview). */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Buffer.isBuffer(value)) return `${value.length} bytes of raw data`;
  if (value instanceof Date) return `a date (${value.toISOString()})`;
  const kind = Array.isArray(value) ? `a ${value.length}-element list` : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
  let preview: string;
  try {
    preview = JSON.stringify(value) ?? String(value);
  } catch {
    preview = String(value);
  }
  return `${kind} ${preview.length > 80 ? `${preview.slice(0, 80)}…` : preview}`;
}

/** Sets an own enumerable property, even for keys such as `__proto__` that plain assignment would misread. */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
