import { brandClass, KqError, randomUuid, type ResultBackend } from '@kq/core';
import { ChordError } from '../errors/errors';
import type { SignatureJson } from '../protocol/index';
import { GroupResult, type AsyncResult, type ResultNode, type SetMember } from '../results/index';
import type { CanvasAppView } from '../contract/app-contract';
import { Group, type ResultsOf, type SignatureInput } from './group';
import { Signature, type AnySignature, type FreezeOptions } from './signature';
import type { WireOptions } from './signature-options';

/**
 * A group and a body run once all of it finished, with the list of its results (Celery's `chord`). The join is the
 * result backend's: natively on Redis (and memory), by Celery's `celery.chord_unlock` polling elsewhere; rpc://
 * refuses chords, as Celery does.
 */
export class Chord<R = unknown> extends Signature<R> {
  header: Group;
  body: AnySignature;

  constructor(header: Group | readonly SignatureInput[], body: SignatureInput, options: Readonly<WireOptions> = {}, app?: CanvasAppView) {
    const headerGroup = header instanceof Group ? header : new Group(header, {}, app);
    const bodySignature = body instanceof Signature ? body : Signature.fromJSON(body, app);
    super('celery.chord', [], {}, {}, false, 'chord', app ?? headerGroup.app ?? bodySignature.app);
    this.options = { ...options }; // a composite's options travel as given (see withWireOptions)
    this.header = headerGroup;
    this.body = bodySignature;
  }

  /** Header tasks made immutable; the body keeps taking the results. */
  override setImmutable(immutable: boolean): void {
    for (const task of this.header.tasks) task.setImmutable(immutable);
  }

  override link<S extends SignatureInput>(callback: S): S {
    this.body.link(callback);
    return callback;
  }

  override linkError<S extends SignatureInput>(errback: S): S {
    this.body.linkError(errback);
    return errback;
  }

  /** The header frozen with this chord's body; the body frozen in the chord's place; the body's result returned. */
  override freeze(id?: string, where: FreezeOptions = {}): AsyncResult<R> {
    const headerResult = this.header.freeze(undefined, { parentId: where.parentId, rootId: where.rootId, chord: this.body });
    const bodyResult = this.body.freeze(id, {
      rootId: where.rootId,
      chord: where.chord,
      groupId: where.groupId,
      groupIndex: where.groupIndex,
    }) as unknown as AsyncResult<R>;
    linkToHeader(bodyResult, headerResult);
    this.options['task_id'] = this.header.id;
    return bodyResult;
  }

  override async applyWire(args: readonly unknown[], _kwargs: Readonly<Record<string, unknown>>, given: Readonly<WireOptions>): Promise<AsyncResult<R>> {
    const partialArgs = args.length > 0 && !this.immutable ? [...args, ...this.args] : this.args;
    const givenOptions: WireOptions = {};
    for (const [key, value] of Object.entries(given)) if (value !== undefined && value !== null) givenOptions[key] = value;
    const body = this.body.clone([], {}, givenOptions);
    const header = this.header.clone();
    const options: WireOptions = { ...this.options, ...givenOptions };
    const taskId = typeof options['task_id'] === 'string' ? options['task_id'] : undefined;
    delete options['task_id'];
    return this.run(header, body, partialArgs, taskId, options);
  }

  override chordSize(): number {
    return this.body.chordSize();
  }

  override toJSON(): SignatureJson {
    const json = super.toJSON();
    // As Celery builds it: the header as the list of its tasks, the body, and the chord's own kwargs (none).
    json.kwargs = { header: this.header.tasks.map((task) => task.toJSON()), body: this.body.toJSON(), kwargs: {} };
    return json;
  }

  protected override rebuild(args: unknown[], _kwargs: Record<string, unknown>, options: WireOptions): this {
    const copy = new Chord(this.header.clone(), this.body.clone(), options, this.app);
    copy.args = args;
    copy.immutable = this.immutable;
    return copy as this;
  }

  /** Celery's `chord.run`: freeze the body, freeze the header into the chord, prepare the join, send the header. */
  private async run(header: Group, body: AnySignature, partialArgs: readonly unknown[], taskId: string | undefined, given: WireOptions): Promise<AsyncResult<R>> {
    const app = this.requireApp();
    const groupId = header.id ?? randomUuid();
    const rootId = typeof body.options['root_id'] === 'string' ? body.options['root_id'] : undefined;
    const options = { ...given };
    delete options['task_id'];
    Object.assign(body.options, options);
    const bodyResult = body.freeze(taskId, { rootId }) as unknown as AsyncResult<R>;
    // The rest of a chain goes on after the body, not after each header task; nor does an outer chord.
    delete options['chain'];
    delete options['chord'];
    const [, results] = header.freezeGroupTasks({ groupId, chord: body, rootId });
    let headerResult: GroupResult;
    if (header.tasks.length > 0) {
      await prepareChord(app, groupId, results, body);
      headerResult = await header.applyWire(partialArgs, {}, { ...options, task_id: groupId });
    } else {
      // Nothing in the header will ever complete the join: run the body at once, with no results.
      await body.applyWire([[]], {}, {});
      headerResult = new GroupResult(groupId, results, app, app.revoker);
    }
    bodyResult.parent = headerResult;
    return bodyResult;
  }
}
brandClass(Chord, '@kq/worker:Chord');

/** The first result up the body's parents that has none gets the header's (a chain body's first step). */
function linkToHeader(bodyResult: ResultNode & { parent: ResultNode | null }, headerResult: ResultNode): void {
  const seen = new Set<string>();
  let node: (ResultNode & { parent?: ResultNode | null }) | null = bodyResult;
  while (node) {
    if (seen.has(node.id)) throw new KqError(`The results of chord ${headerResult.id} have a cycle of parents.`);
    seen.add(node.id);
    if (!node.parent) {
      node.parent = headerResult;
      return;
    }
    node = node.parent as ResultNode & { parent?: ResultNode | null };
  }
}

/** The result backend, if it can join chords; else Celery's error (rpc://) or kq's (none configured). */
export async function chordBackend(app: CanvasAppView): Promise<ResultBackend> {
  const backend = await app.backend();
  if (!backend) {
    throw new ChordError(
      "A chord needs a result backend to join its header's results; configure one, e.g. new App('proj', { backend: 'redis://127.0.0.1:6379/0' }).",
    );
  }
  if (backend.chordsRefused) throw new ChordError(backend.chordsRefused);
  return backend;
}

/**
 * Celery's `backend.apply_chord`. A native join needs nothing before the header is sent except, when a header member
 * is itself a group, the saved group so the body gets nested results. Other backends get Celery's
 * `celery.chord_unlock` task, which polls the header's results and sends the body.
 */
async function prepareChord(app: CanvasAppView, groupId: string, results: readonly SetMember[], body: AnySignature): Promise<void> {
  const backend = await chordBackend(app);
  const headerResult = new GroupResult(groupId, results, backend);
  if (backend.chordJoin) {
    if (results.some((result) => result instanceof GroupResult)) await backend.groups?.saveGroup(groupId, headerResult.asTuple(), app.conf.resultExpires * 1000);
    return;
  }
  const queue = typeof body.options['queue'] === 'string' ? body.options['queue'] : (app.withTaskDefaults(body.task, {}).queue ?? app.routeQueue(body.task));
  const priority = typeof body.options['priority'] === 'number' ? body.options['priority'] : (app.withTaskDefaults(body.task, {}).priority ?? 0);
  await app.sendTaskMessage('celery.chord_unlock', [groupId, body.toJSON()], {
    kwargs: { interval: null, max_retries: null, result: results.map((result) => result.asTuple()) },
    countdown: 1,
    ...(queue ? { queue } : {}),
    priority,
  });
}

Signature.registerType('chord', (json, app) => {
  const kwargs = json.kwargs as { header?: unknown; body?: unknown };
  // Celery writes the header as a list of tasks, or (once frozen) as a group: either way its tasks.
  const header = kwargs.header;
  const tasks = Array.isArray(header)
    ? (header as SignatureJson[])
    : isRecord(header) && isRecord(header['kwargs']) && Array.isArray(header['kwargs']['tasks'])
      ? (header['kwargs']['tasks'] as SignatureJson[])
      : [];
  if (!isRecord(kwargs.body)) throw new KqError(`A chord signature has no body: ${JSON.stringify(json).slice(0, 200)}`);
  const chord = new Chord(tasks, kwargs.body as unknown as SignatureJson, json.options ?? {}, app);
  // A frozen header keeps its group id: a redelivered chain step that sends this chord again joins the same group.
  const groupId = isRecord(header) && isRecord(header['options']) ? header['options']['task_id'] : undefined;
  if (typeof groupId === 'string') chord.header.options['task_id'] = groupId;
  chord.args = [...(json.args ?? [])];
  chord.immutable = json.immutable ?? false;
  return chord;
});

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Runs `header` in parallel, then `body` with the list of their results: `chord([add.s(1, 1), add.s(2, 2)], tsum.s())`.
 * Typed: the body must take the header's results (a `task.s()` whose first parameter accepts them).
 */
export function chord<const H extends readonly AnySignature[], R>(header: H, body: Signature<R, ResultNode, ResultsOf<H>>, options?: Readonly<WireOptions>): Chord<R>;
export function chord<G extends readonly unknown[], R>(header: Group<G>, body: Signature<R, ResultNode, G>, options?: Readonly<WireOptions>): Chord<R>;
export function chord<R>(header: Group | readonly AnySignature[], body: Signature<R, ResultNode, never>, options: Readonly<WireOptions> = {}): Chord<R> {
  return new Chord<R>(header, body, options);
}
