import { brandClass, KqError, randomUuid } from '@kq/core';
import type { SignatureJson } from '../protocol/index';
import { AsyncResult, type ResultNode } from '../results/index';
import type { CanvasAppView } from '../contract/app-contract';
import { applyOptionsFromWire, toWireOptions, wireOptionsJson, type SignatureConstructorOptions, type SignatureOptions, type WireOptions } from './signature-options';

/** Any signature, whatever it gives when sent and takes in. */
export type AnySignature = Signature<unknown, ResultNode, never>;

/** Where `freeze` puts a signature in a canvas (Celery's `freeze` keyword arguments). */
export interface FreezeOptions {
  groupId?: string | undefined;
  chord?: AnySignature | undefined;
  rootId?: string | undefined;
  parentId?: string | undefined;
  groupIndex?: number | undefined;
}

type FromJson = (json: SignatureJson, app: CanvasAppView | undefined) => AnySignature;

/** Composite signature types by `subtask_type` (Celery's `register_type`): each canvas module adds its own. */
const signatureTypes = new Map<string, FromJson>();

/** Options whose value a merge keeps when the signature already has one: changing them would stall a chord. */
const IMMUTABLE_OPTIONS = new Set(['group_id']);

/**
 * A task invocation that can be passed around and composed — Celery's `Signature`, in its wire form
 * (`{task, args, kwargs, options, subtask_type, immutable}`), so a Python worker forwards what kq builds and the
 * other way round. `R` is the task's result type; `Out` what sending it gives (a group gives a `GroupResult`).
 * Options are kept under Celery's names (`task_id`, `routing_key`, `link`...), as they travel.
 */
export class Signature<R = unknown, Out extends ResultNode = AsyncResult<R>, In = unknown> {
  /** Carries `R` for type inference; never set. */
  declare readonly resultType?: R;
  /**
   * Carries what the signature takes as the previous step's result (a partial `task.s()`: its first parameter), so
   * a chord body that cannot take its header's results does not compile. A function type: checked contravariantly.
   */
  declare readonly acceptsInput?: (input: In) => void;
  readonly task: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
  options: WireOptions;
  readonly subtaskType: string | null;
  immutable: boolean;
  /** The app that sends it: a task's `.s()` sets it; signatures read from a message get the worker's. */
  app: CanvasAppView | undefined;

  /**
   * `options` by kq's names (`taskId`) or Celery's (`task_id`); an unknown one is refused (`InvalidSignatureOption`).
   * A signature read from the wire keeps whatever options its sender gave: see `fromJSON`.
   */
  constructor(
    task: string,
    args: readonly unknown[] = [],
    kwargs: Readonly<Record<string, unknown>> = {},
    options: Readonly<SignatureConstructorOptions> = {},
    immutable = false,
    subtaskType: string | null = null,
    app?: CanvasAppView,
  ) {
    this.task = task;
    this.args = [...args];
    this.kwargs = { ...kwargs };
    this.options = toWireOptions(options);
    this.immutable = immutable;
    this.subtaskType = subtaskType;
    this.app = app;
  }

  /** Registers how a composite `subtask_type` is read back from JSON. */
  static registerType(subtaskType: string, fromJson: FromJson): void {
    signatureTypes.set(subtaskType, fromJson);
  }

  /** A signature from its JSON form, as the composite type its `subtask_type` names (chain, group, chord...). */
  static fromJSON(json: SignatureJson, app?: CanvasAppView): AnySignature {
    const fromJson = json.subtask_type ? signatureTypes.get(json.subtask_type) : undefined;
    if (fromJson) return fromJson(json, app);
    return withWireOptions(new Signature(json.task, json.args ?? [], json.kwargs ?? {}, {}, json.immutable ?? false, json.subtask_type ?? null, app), json.options ?? {});
  }

  /** The task id, once set or frozen. */
  get id(): string | undefined {
    const id = this.options['task_id'];
    return typeof id === 'string' ? id : undefined;
  }

  /** Sets options (`queue`, `countdown`, `priority`, `link`... in kq's names); returns this signature. */
  set(options: SignatureOptions, immutable?: boolean): this {
    if (immutable !== undefined) this.setImmutable(immutable);
    Object.assign(this.options, toWireOptions(options));
    return this;
  }

  setImmutable(immutable: boolean): void {
    this.immutable = immutable;
  }

  /** Adds a callback, sent with this task's return value when it succeeds; returns the callback. */
  link<S extends AnySignature | SignatureJson>(callback: S): S {
    this.appendOption('link', callback);
    return callback;
  }

  /** Adds an errback, sent with this task's id when it fails; returns the errback. */
  linkError<S extends AnySignature | SignatureJson>(errback: S): S {
    this.appendOption('link_error', errback);
    return errback;
  }

  /** `linkError` that returns this signature, for chaining calls. */
  onError(errback: AnySignature | SignatureJson): this {
    this.linkError(errback);
    return this;
  }

  /** A copy, with `args` prepended (unless immutable), `kwargs` merged and `options` over its own. */
  clone(args: readonly unknown[] = [], kwargs: Readonly<Record<string, unknown>> = {}, options?: Readonly<WireOptions>): this {
    const [mergedArgs, mergedKwargs, mergedOptions] =
      args.length > 0 || hasKeys(kwargs) || options !== undefined ? this.merge(args, kwargs, options) : [this.args, this.kwargs, this.options];
    return this.rebuild([...mergedArgs], { ...mergedKwargs }, copyOptions(mergedOptions));
  }

  /**
   * Gives the signature its task id (and its place: group, chord, root, parent) without sending it, and returns the
   * result it will have. A signature that already has an id keeps it.
   */
  freeze(id?: string, where: FreezeOptions = {}): Out {
    const options = this.options;
    let taskId = this.id;
    if (taskId === undefined) {
      taskId = id ?? randomUuid();
      options['task_id'] = taskId;
    }
    if (where.rootId) options['root_id'] = where.rootId;
    if (where.parentId) options['parent_id'] = where.parentId;
    if (!('reply_to' in options) && this.app) options['reply_to'] = this.app.threadOid;
    if (where.groupId && !('group_id' in options)) options['group_id'] = where.groupId;
    if (where.chord) options['chord'] = where.chord;
    if (where.groupIndex !== undefined) options['group_index'] = where.groupIndex;
    return this.resultFor(taskId) as unknown as Out;
  }

  /** Sends it: `args` prepended to its own (unless immutable), `kwargs` merged, `options` over its own. */
  applyAsync(args: readonly unknown[] = [], kwargs: Readonly<Record<string, unknown>> = {}, options: SignatureOptions = {}): Promise<Out> {
    return this.applyWire(args, kwargs, toWireOptions(options));
  }

  /** Sends it with these arguments prepended (Celery's `delay`). */
  delay(...args: unknown[]): Promise<Out> {
    return this.applyWire(args, {}, {});
  }

  /** Sends it with options in Celery's names, as a worker forwarding a callback or chain step does. */
  async applyWire(args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, options: Readonly<WireOptions>): Promise<Out> {
    const given = withoutNullish(options);
    const [sendArgs, sendKwargs, sendOptions] =
      args.length > 0 || hasKeys(kwargs) || hasKeys(given) ? this.merge(args, kwargs, given) : [this.args, this.kwargs, this.options];
    const app = this.requireApp();
    const { apply, chord } = applyOptionsFromWire(sendOptions, { ...sendKwargs });
    const routeName = sendOptions['route_name'];
    const call = app.withTaskDefaults(typeof routeName === 'string' ? routeName : this.task, apply);
    if (typeof routeName === 'string') call.routeName = routeName;
    const id = await app.sendTaskMessage(this.task, [...sendArgs], call, { chord });
    const result = this.resultFor(id);
    return result as unknown as Out;
  }

  /** How many chord parts this signature adds when it is in a chord's header (Celery's `_chord._descend`). */
  chordSize(): number {
    return 1;
  }

  toJSON(): SignatureJson {
    return {
      task: this.task,
      args: [...this.args],
      kwargs: { ...this.kwargs },
      options: wireOptionsJson(this.options),
      subtask_type: this.subtaskType,
      immutable: this.immutable,
    };
  }

  /** Celery's `_merge`: prepended args (unless immutable), merged kwargs, options over the signature's own. */
  protected merge(
    args: readonly unknown[],
    kwargs: Readonly<Record<string, unknown>>,
    options: Readonly<WireOptions> | undefined,
  ): [readonly unknown[], Readonly<Record<string, unknown>>, WireOptions] {
    let merged = this.options;
    if (options !== undefined) {
      merged = { ...this.options };
      for (const [key, value] of Object.entries(options)) {
        if (!IMMUTABLE_OPTIONS.has(key) || !(key in this.options)) merged[key] = value;
      }
    }
    if (this.immutable) return [this.args, this.kwargs, merged];
    return [args.length > 0 ? [...args, ...this.args] : this.args, hasKeys(kwargs) ? { ...this.kwargs, ...kwargs } : this.kwargs, merged];
  }

  /** A new signature of this kind with these parts (composites rebuild their children). */
  protected rebuild(args: unknown[], kwargs: Record<string, unknown>, options: WireOptions): this {
    return withWireOptions(new Signature(this.task, args, kwargs, {}, this.immutable, this.subtaskType, this.app), options) as this;
  }

  protected resultFor(taskId: string): AsyncResult<R> {
    return new AsyncResult<R>(taskId, this.app ?? null);
  }

  /** The app that sends it, or a clear error. */
  protected requireApp(): CanvasAppView {
    if (this.app) return this.app;
    throw new KqError(
      `The signature of ${this.task} has no app to send it with; make it from a task (task.s(...)) or pass the app: Signature.fromJSON(json, app).`,
    );
  }

  private appendOption(key: 'link' | 'link_error', value: unknown): void {
    const current = this.options[key];
    const list = Array.isArray(current) ? current : current === undefined || current === null ? [] : [current];
    if (!list.includes(value)) list.push(value);
    this.options[key] = list;
  }
}
brandClass(Signature, '@kq/worker:Signature');

/**
 * The signature with options as they travel, kept whole: a sender's options are not ours to refuse (Celery keeps
 * unknown ones, and 5.3+ stamps add their own). Composites and signatures read from JSON are made this way.
 */
export function withWireOptions<S extends AnySignature>(signature: S, options: Readonly<WireOptions>): S {
  signature.options = { ...options };
  return signature;
}

function hasKeys(value: Readonly<Record<string, unknown>>): boolean {
  for (const _ in value) return true;
  return false;
}

/** Celery drops options given as None. */
function withoutNullish(options: Readonly<WireOptions>): WireOptions {
  const kept: WireOptions = {};
  for (const [key, value] of Object.entries(options)) if (value !== undefined && value !== null) kept[key] = value;
  return kept;
}

/** A copy whose lists are copies, so adding a link to a clone leaves the original alone. */
function copyOptions(options: Readonly<WireOptions>): WireOptions {
  const copy: WireOptions = {};
  for (const [key, value] of Object.entries(options)) copy[key] = Array.isArray(value) ? [...(value as unknown[])] : value;
  return copy;
}
