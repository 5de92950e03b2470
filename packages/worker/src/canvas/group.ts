import { brandClass, KqError, randomUuid } from '@kq/core';
import { currentTask } from '../send/current-task';
import type { SignatureJson } from '../protocol/index';
import { GroupResult, type AsyncResult, type ResultNode, type SetMember } from '../results/index';
import type { CanvasAppView } from '../contract/app-contract';
import { Signature, type AnySignature, type FreezeOptions } from './signature';
import type { WireOptions } from './signature-options';

/** A signature, or its JSON form (a step read from a message). */
export type SignatureInput = AnySignature | SignatureJson;

/** The result types of a list of signatures, as a tuple. */
export type ResultsOf<T extends readonly AnySignature[]> = { -readonly [K in keyof T]: T[K] extends Signature<infer R, ResultNode, never> ? Awaited<R> : unknown };

/**
 * Tasks run in parallel (Celery's `group`): sending it sends every member with the same `group_id`, and gives a
 * `GroupResult` whose `join()` is the members' results in order. Nested groups are flattened.
 */
export class Group<R extends readonly unknown[] = unknown[]> extends Signature<R, GroupResult<R>> {
  tasks: AnySignature[];

  constructor(tasks: readonly SignatureInput[], options: Readonly<WireOptions> = {}, app?: CanvasAppView) {
    const members = tasks.map((task) => (task instanceof Signature ? task : Signature.fromJSON(task, app)));
    super('celery.group', [], {}, {}, false, 'group', app ?? members.find((task) => task.app)?.app);
    this.options = { ...options }; // a composite's options travel as given (see withWireOptions)
    this.tasks = members;
  }

  get length(): number {
    return this.tasks.length;
  }

  /** The one member of a one-member group, else the group (Celery's `maybe_unroll_group`). */
  unrollSingle(): AnySignature {
    return this.tasks.length === 1 ? (this.tasks[0] as AnySignature) : this;
  }

  override setImmutable(immutable: boolean): void {
    for (const task of this.tasks) task.setImmutable(immutable);
  }

  /** Links to the first member only, made immutable (Celery's rule): use a chord to wait for all of them. */
  override link<S extends SignatureInput>(callback: S): S {
    const first = this.tasks[0];
    if (!first) throw new KqError('Cannot link a callback to an empty group.');
    const immutable = (callback instanceof Signature ? callback : Signature.fromJSON(callback, this.app)).clone();
    immutable.setImmutable(true);
    first.link(immutable);
    return callback;
  }

  /** Every member gets the errback (so it may run more than once, but never not at all). */
  override linkError<S extends SignatureInput>(errback: S): S {
    for (const task of this.tasks) task.linkError(errback);
    return errback;
  }

  override freeze(_id?: string, where: FreezeOptions = {}): GroupResult<R> {
    const [groupId, results] = this.freezeGroupTasks(where);
    return this.groupResult(groupId, results);
  }

  /**
   * Celery's `_freeze_group_tasks`: the group's id (its `task_id` option, else `where.groupId`, else new) and each
   * member frozen with its `group_index`, nested groups flattened.
   */
  freezeGroupTasks(where: FreezeOptions): [string, SetMember[]] {
    const options = this.options;
    let groupId = typeof options['task_id'] === 'string' ? options['task_id'] : undefined;
    if (groupId === undefined) {
      groupId = where.groupId ?? randomUuid();
      options['task_id'] = groupId;
    }
    if (where.groupId) options['group_id'] = where.groupId;
    if (where.chord) options['chord'] = where.chord;
    if (where.groupIndex !== undefined) options['group_index'] = where.groupIndex;
    if (!('root_id' in options)) options['root_id'] = where.rootId ?? null;
    if (!('parent_id' in options)) options['parent_id'] = where.parentId ?? null;
    const rootId = stringOrUndefined(options['root_id']);
    const parentId = stringOrUndefined(options['parent_id']);
    const stack: AnySignature[] = [...this.tasks];
    const flat: AnySignature[] = [];
    const results: SetMember[] = [];
    let groupIndex = 0;
    while (stack.length > 0) {
      const task = (stack.shift() as AnySignature).clone();
      if (task instanceof Group) {
        // Python's deque.extendleft: a nested group's members come first, in reverse order.
        stack.unshift(...[...task.tasks].reverse());
        continue;
      }
      flat.push(task);
      results.push(task.freeze(undefined, { groupId: where.groupId, chord: where.chord, rootId, parentId, groupIndex }) as SetMember);
      groupIndex += 1;
    }
    this.tasks = flat;
    return [groupId, results];
  }

  override async applyWire(args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, given: Readonly<WireOptions>): Promise<GroupResult<R>> {
    if (given['link'] !== undefined && given['link'] !== null) throw new KqError('Cannot add link to group: use a chord');
    if (given['link_error'] !== undefined && given['link_error'] !== null) {
      throw new KqError('Cannot add link to group: do that on individual tasks');
    }
    if (this.tasks.length === 0) return this.freeze();
    const options: WireOptions = { ...this.options };
    for (const [key, value] of Object.entries(given)) if (value !== undefined && value !== null) options[key] = value;
    const groupId = typeof options['task_id'] === 'string' ? options['task_id'] : randomUuid();
    delete options['task_id'];
    options['group_id'] = groupId;
    const rootId = stringOrUndefined(options['root_id']);
    const addToParent = options['add_to_parent'] !== false;
    const chord = options['chord'];
    delete options['chord'];
    // Each member keeps its own index; the group's (a replaced group member's, say) is not theirs, as Python's
    // `_apply_tasks` takes `group_index` apart from the options it gives the members.
    delete options['group_index'];
    const prepared = this.prepared(this.tasks, [], groupId, rootId);
    const results = await this.applyPrepared(prepared, groupId, args, kwargs, options, chord);
    let result = this.groupResult(groupId, results);
    // A group of one chain ending in a group: its result is that inner group's.
    if (results.length === 1 && results[0] instanceof GroupResult) result = results[0] as unknown as GroupResult<R>;
    if (addToParent) currentTask()?.children.push(result.asTuple());
    return result;
  }

  override chordSize(): number {
    return this.tasks.reduce((sum, task) => sum + task.chordSize(), 0);
  }

  override toJSON(): SignatureJson {
    const json = super.toJSON();
    json.kwargs = { tasks: this.tasks.map((task) => task.toJSON()) };
    return json;
  }

  protected override rebuild(_args: unknown[], _kwargs: Record<string, unknown>, options: WireOptions): this {
    return new Group(
      this.tasks.map((task) => task.clone()),
      options,
      this.app,
    ) as this;
  }

  /** Celery's `_prepared`: each member cloned and frozen into the group, nested groups flattened. */
  private prepared(tasks: readonly AnySignature[], partialArgs: readonly unknown[], groupId: string, rootId: string | undefined): Array<[AnySignature, SetMember]> {
    const out: Array<[AnySignature, SetMember]> = [];
    for (const original of tasks) {
      const task = original.clone();
      if (task instanceof Group) {
        out.push(...task.prepared(task.tasks, partialArgs, groupId, rootId));
        continue;
      }
      if (partialArgs.length > 0 && !task.immutable) task.args = [...partialArgs, ...task.args];
      out.push([task, task.freeze(undefined, { groupId, rootId }) as SetMember]);
    }
    return out;
  }

  /**
   * Sends the prepared members. In a chord, the join's size is set first: the header's last part must find it, and
   * setting it before any is sent (rather than before the last, as Celery does for generators) is as safe.
   */
  private async applyPrepared(
    prepared: ReadonlyArray<[AnySignature, SetMember]>,
    groupId: string,
    args: readonly unknown[],
    kwargs: Readonly<Record<string, unknown>>,
    options: Readonly<WireOptions>,
    chord: unknown,
  ): Promise<SetMember[]> {
    let size = 0;
    let inChord = false;
    for (const [task] of prepared) {
      size += task.chordSize();
      if ((chord ?? task.options['chord']) !== undefined && (chord ?? task.options['chord']) !== null) inChord = true;
    }
    if (inChord) {
      const app = this.requireApp();
      const backend = await app.backend();
      await backend?.chordJoin?.setChordSize(groupId, size, app.conf.resultExpires * 1000);
    }
    const memberOptions: WireOptions = { ...options, add_to_parent: false };
    await Promise.all(
      prepared.map(([task]) => task.applyWire(args, kwargs, chord === undefined || chord === null ? memberOptions : { ...memberOptions, chord })),
    );
    return prepared.map(([, result]) => result);
  }

  private groupResult(groupId: string, results: readonly SetMember[]): GroupResult<R> {
    return new GroupResult<R>(groupId, results, this.app ?? null, this.app?.revoker);
  }
}
brandClass(Group, '@kq/worker:Group');

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

Signature.registerType('group', (json, app) => {
  const tasks = (json.kwargs as { tasks?: unknown }).tasks;
  return new Group(Array.isArray(tasks) ? (tasks as SignatureJson[]) : [], json.options ?? {}, app);
});

/** A group's result type when sent. */
export type GroupOf<T extends readonly AnySignature[]> = Group<ResultsOf<T>>;

/** Runs the signatures in parallel: `group([add.s(1, 1), add.s(2, 2)])`. Typed: the result is the tuple of theirs. */
export function group<const T extends readonly AnySignature[]>(tasks: T, options: Readonly<WireOptions> = {}): GroupOf<T> {
  return new Group<ResultsOf<T>>(tasks, options);
}

export type { AsyncResult };
