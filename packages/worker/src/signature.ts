import type { SignatureJson } from './protocol/index';

export interface SignatureOptions {
  taskId?: string;
  queue?: string;
  countdown?: number;
  eta?: Date | string;
  expires?: number | Date | string;
  priority?: number;
  [option: string]: unknown;
}

/**
 * A task invocation that can be passed around: Celery's `Signature`, serialized to the JSON form Python reads
 * (`{task, args, kwargs, options, subtask_type, immutable}`) for callbacks, errbacks and chains.
 */
export class Signature {
  readonly task: string;
  readonly args: readonly unknown[];
  readonly kwargs: Readonly<Record<string, unknown>>;
  readonly options: Readonly<SignatureOptions>;
  readonly subtaskType: string | null;
  readonly immutable: boolean;

  constructor(
    task: string,
    args: readonly unknown[] = [],
    kwargs: Record<string, unknown> = {},
    options: SignatureOptions = {},
    immutable = false,
    subtaskType: string | null = null,
  ) {
    this.task = task;
    this.args = args;
    this.kwargs = kwargs;
    this.options = options;
    this.immutable = immutable;
    this.subtaskType = subtaskType;
  }

  static fromJSON(json: SignatureJson): Signature {
    return new Signature(json.task, json.args, json.kwargs, json.options as SignatureOptions, json.immutable, json.subtask_type);
  }

  /** A copy whose args are `prefix` followed by this signature's args (unless immutable), as a callback receives. */
  withPrependedArgs(prefix: readonly unknown[]): Signature {
    if (this.immutable) return this;
    return new Signature(this.task, [...prefix, ...this.args], { ...this.kwargs }, this.options, this.immutable, this.subtaskType);
  }

  toJSON(): SignatureJson {
    const options: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(this.options)) {
      if (value === undefined) continue;
      options[key === 'taskId' ? 'task_id' : key] = value;
    }
    return {
      task: this.task,
      args: [...this.args],
      kwargs: { ...this.kwargs },
      options,
      subtask_type: this.subtaskType,
      immutable: this.immutable,
    };
  }
}
