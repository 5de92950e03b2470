import { brandClass, KqError } from '@kq/core';
import type { SignatureJson } from '../protocol/index';
import { GroupResult, type AsyncResult, type ResultNode } from '../results/index';
import type { CanvasAppView } from '../contract/app-contract';
import { Chord, chordBackend } from './chord';
import { Group, type SignatureInput } from './group';
import { Signature, type AnySignature } from './signature';
import type { WireOptions } from './signature-options';

/** Options `chain.run` takes for itself (Celery's keyword parameters); the rest go to the first task only. */
const RUN_OPTIONS = ['group_id', 'chord', 'task_id', 'link', 'link_error', 'publisher', 'producer', 'root_id', 'parent_id', 'group_index'];

/** The last element's result type. */
type LastResult<T extends readonly AnySignature[]> = T extends readonly [...AnySignature[], Signature<infer R, ResultNode, never>] ? R : unknown;

/** What a signature gives the next step. */
type ResultOf<S> = S extends Signature<infer R, ResultNode, never> ? Awaited<R> : unknown;

/**
 * The steps, each after the first required to take the previous one's result (a `task.s()` whose first parameter
 * accepts it; `si()` and signatures by name take anything): `chain(add.s(1, 1), shout.s())` does not compile.
 */
type Linked<T extends readonly AnySignature[], Previous = never, Checked extends readonly unknown[] = []> = T extends readonly [
  infer Head extends AnySignature,
  ...infer Rest extends readonly AnySignature[],
]
  ? Linked<Rest, ResultOf<Head>, [...Checked, [Previous] extends [never] ? Head : Head & Signature<unknown, ResultNode, Previous>]>
  : Checked;

/**
 * Tasks run one after another, each given the previous one's result (Celery's `chain`). On the wire the first task
 * carries the rest in its `chain` field, reversed, so each worker pops the next step — whichever language runs it.
 * A group followed by a task becomes a chord.
 */
export class Chain<R = unknown> extends Signature<R> {
  tasks: AnySignature[];

  constructor(tasks: readonly SignatureInput[], options: Readonly<WireOptions> = {}, app?: CanvasAppView) {
    const steps = tasks.map((task) => (task instanceof Signature ? task : Signature.fromJSON(task, app)));
    super('celery.chain', [], {}, {}, false, 'chain', app ?? steps.find((task) => task.app)?.app);
    this.options = { ...options }; // a composite's options travel as given (see withWireOptions)
    this.tasks = steps;
  }

  /** The steps, each cloned, with the chain's own errbacks added to every one. */
  unchainTasks(): AnySignature[] {
    const tasks = this.tasks.map((task) => task.clone());
    const errbacks = this.options['link_error'];
    for (const errback of Array.isArray(errbacks) ? errbacks : []) for (const task of tasks) task.linkError(errback as SignatureInput);
    return tasks;
  }

  /** Adds a callback to the last step (Celery's chain `link`: the chain's result is the last step's). */
  override link<S extends SignatureInput>(callback: S): S {
    const last = this.tasks[this.tasks.length - 1];
    if (!last) return super.link(callback);
    return last.link(callback);
  }

  override freeze(id?: string, where: { groupId?: string | undefined; chord?: AnySignature | undefined; rootId?: string | undefined; parentId?: string | undefined; groupIndex?: number | undefined } = {}): AsyncResult<R> {
    const { results } = this.prepareSteps(this.args, this.kwargs, this.tasks, {
      rootId: where.rootId,
      parentId: where.parentId,
      lastTaskId: id,
      groupId: where.groupId,
      chordBody: where.chord,
      groupIndex: where.groupIndex,
      clone: false,
    });
    const last = results[0];
    if (!last) throw new KqError('Cannot freeze an empty chain.');
    return last as AsyncResult<R>;
  }

  override async applyWire(args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, given: Readonly<WireOptions>): Promise<AsyncResult<R>> {
    const options: WireOptions = { ...this.options };
    for (const [key, value] of Object.entries(given)) if (value !== undefined && value !== null) options[key] = value;
    return this.run(args, kwargs, options);
  }

  override chordSize(): number {
    // The last step that completes anything is the one that counts toward an enclosing chord.
    for (let index = this.tasks.length - 1; index >= 0; index -= 1) {
      const size = (this.tasks[index] as AnySignature).chordSize();
      if (size > 0) return size;
    }
    return 0;
  }

  override toJSON(): SignatureJson {
    const json = super.toJSON();
    json.kwargs = { tasks: this.tasks.map((task) => task.toJSON()) };
    return json;
  }

  protected override rebuild(args: unknown[], _kwargs: Record<string, unknown>, options: WireOptions): this {
    const copy = new Chain(
      this.tasks.map((task) => task.clone()),
      options,
      this.app,
    );
    copy.args = args;
    copy.immutable = this.immutable;
    return copy as this;
  }

  private async run(args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, options: WireOptions): Promise<AsyncResult<R>> {
    const own: Record<string, unknown> = {};
    const rest: WireOptions = {};
    for (const [key, value] of Object.entries(options)) (RUN_OPTIONS.includes(key) ? own : rest)[key] = value;
    const partialArgs = args.length > 0 && !this.immutable ? [...args, ...this.args] : this.args;
    const { tasks, results, hasChord } = this.prepareSteps(partialArgs, kwargs, this.tasks, {
      rootId: stringOrUndefined(own['root_id']),
      parentId: stringOrUndefined(own['parent_id']),
      linkError: own['link_error'],
      lastTaskId: stringOrUndefined(own['task_id']),
      groupId: stringOrUndefined(own['group_id']),
      chordBody: own['chord'] instanceof Signature ? own['chord'] : own['chord'] ? Signature.fromJSON(own['chord'] as SignatureJson, this.app) : undefined,
      groupIndex: typeof own['group_index'] === 'number' ? own['group_index'] : undefined,
      clone: true,
    });
    if (tasks.length === 0) throw new KqError('Cannot send an empty chain: give it at least one task.');
    if (hasChord) await chordBackend(this.requireApp());
    const link = own['link'];
    for (const callback of Array.isArray(link) ? link : link ? [link] : []) (tasks[0] as AnySignature).link(callback as SignatureInput);
    const first = tasks.pop() as AnySignature;
    // The remaining steps, reversed (the worker pops the next one); an existing chain is extended, never mutated.
    const existing = Array.isArray(rest['chain']) ? (rest['chain'] as unknown[]) : undefined;
    const chain = existing ? [...existing, ...tasks] : tasks;
    const sent = await first.applyWire([], {}, { ...rest, chain });
    return (tasks.length > 0 ? results[0] : sent) as AsyncResult<R>;
  }

  /**
   * Celery's `prepare_steps`: walks the steps from the last, cloning each (the first gets the partial arguments),
   * splicing nested chains, upgrading `group | task` to a chord, freezing each (the last with the chain's id, group
   * and chord), and linking each result to its parent. Returns the steps and results, last step first.
   */
  private prepareSteps(
    args: readonly unknown[],
    kwargs: Readonly<Record<string, unknown>>,
    steps: readonly AnySignature[],
    context: {
      rootId: string | undefined;
      parentId: string | undefined;
      linkError?: unknown;
      lastTaskId: string | undefined;
      groupId: string | undefined;
      chordBody: AnySignature | undefined;
      groupIndex: number | undefined;
      clone: boolean;
    },
  ): { tasks: AnySignature[]; results: ResultNode[]; hasChord: boolean } {
    const pending = [...steps];
    const tasks: AnySignature[] = [];
    const results: ResultNode[] = [];
    let previousTask: AnySignature | undefined;
    let previousResult: (ResultNode & { parent: ResultNode | null }) | undefined;
    let hasChord = false;
    let index = 0;
    while (pending.length > 0) {
      let task = pending.pop() as AnySignature;
      const isFirst = pending.length === 0;
      const isLast = index === 0;
      if (task instanceof Group) task = task.unrollSingle();
      if (context.clone) task = isFirst ? task.clone(args, kwargs) : task.clone();
      else if (isFirst) task.args = [...args, ...task.args];
      if (task instanceof Chain) {
        pending.push(...task.tasks);
        continue;
      }
      if (task instanceof Group && previousTask) {
        // group | task → chord(group, task): the chord takes the place (and the id) of the task it waits to run.
        tasks.pop();
        results.pop();
        const options: WireOptions = previousResult instanceof GroupResult || !previousResult ? {} : { task_id: previousResult.id };
        if (context.rootId) options['root_id'] = context.rootId;
        task = new Chord(task, previousTask, options, this.app);
      }
      const result = (
        isLast
          ? task.freeze(context.lastTaskId, { rootId: context.rootId, groupId: context.groupId, chord: context.chordBody, groupIndex: context.groupIndex })
          : task.freeze(undefined, { rootId: context.rootId })
      ) as ResultNode & { parent: ResultNode | null };
      index += 1;
      if (previousTask && previousResult && !previousResult.parent) previousResult.parent = result;
      const errbacks = context.linkError;
      for (const errback of Array.isArray(errbacks) ? errbacks : errbacks ? [errbacks] : []) task.linkError(errback as SignatureInput);
      tasks.push(task);
      results.push(result);
      previousTask = task;
      previousResult = result;
      if (task instanceof Chord) {
        hasChord = true;
        // The next step's parent is the chord's header, the first result up the body's parents.
        let node: ResultNode & { parent: ResultNode | null } = result;
        while (node.parent) node = node.parent as ResultNode & { parent: ResultNode | null };
        previousResult = node;
      }
    }
    return { tasks, results, hasChord };
  }
}
brandClass(Chain, '@kq/worker:Chain');

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

Signature.registerType('chain', (json, app) => {
  const tasks = (json.kwargs as { tasks?: unknown }).tasks;
  const chain = new Chain(Array.isArray(tasks) ? (tasks as SignatureJson[]) : [], json.options ?? {}, app);
  chain.args = [...(json.args ?? [])];
  chain.immutable = json.immutable ?? false;
  return chain;
});

/** Runs the signatures one after another: `chain(add.s(2, 2), add.s(4), add.s(8))`. Typed: the last step's result. */
export function chain<const T extends readonly AnySignature[]>(...tasks: T & (number extends T['length'] ? T : Linked<T>)): Chain<LastResult<T>> {
  // Chains given as steps are spliced, as Celery's `a | b` does.
  return new Chain<LastResult<T>>(tasks.flatMap((task) => (task instanceof Chain ? task.tasks : [task])));
}
