import { brandClass, KqError, OperationTimeout, type ResultBackend, type ResultTuple } from '@kq/core';
import { AsyncResult, type GetResultOptions, type ResultBackendSource, type ResultNode } from './async-result';

/** Revokes tasks by id (the app's `control.revoke`), handed to result sets so they need not know the app. */
export type Revoker = (taskIds: readonly string[], options: { terminate?: boolean; signal?: string }) => Promise<unknown>;

/** A member of a result set: a task's result, or a nested group's. */
export type SetMember = AsyncResult | GroupResult;

/**
 * Several results read together (Celery's `ResultSet`): `join()` waits for all of them in order and gives their
 * values as an array (a nested group's as a nested array), `completedCount()`, `ready()`, `revoke()`.
 */
export class ResultSet<R extends readonly unknown[] = unknown[]> {
  readonly results: SetMember[];
  readonly #revoker: Revoker | undefined;

  constructor(results: readonly SetMember[], revoker?: Revoker) {
    this.results = [...results];
    this.#revoker = revoker;
  }

  get length(): number {
    return this.results.length;
  }

  /** How many members finished with SUCCESS (Celery's `completed_count`). */
  async completedCount(): Promise<number> {
    const states = await Promise.all(this.results.map((result) => (result instanceof GroupResult ? result.successful() : result.successful())));
    return states.filter(Boolean).length;
  }

  /** True when every member is ready. */
  async ready(): Promise<boolean> {
    return (await Promise.all(this.results.map((result) => result.ready()))).every(Boolean);
  }

  /** True when every member succeeded. */
  async successful(): Promise<boolean> {
    return (await Promise.all(this.results.map((result) => result.successful()))).every(Boolean);
  }

  /** True when any member failed. */
  async failed(): Promise<boolean> {
    return (await Promise.all(this.results.map((result) => result.failed()))).some(Boolean);
  }

  /**
   * Waits for every member, in order, and returns their values (Celery's `join`). The first failure throws, as
   * `AsyncResult.get` does, unless `propagate: false`; `timeout` bounds the whole wait.
   */
  async join(options: GetResultOptions = {}): Promise<R> {
    const deadline = options.timeout === undefined ? undefined : Date.now() + options.timeout;
    const values: unknown[] = [];
    for (const result of this.results) {
      const memberOptions: GetResultOptions = { ...options };
      if (deadline !== undefined) {
        const left = deadline - Date.now();
        if (left <= 0) throw new OperationTimeout(`The group's results were not all ready within ${options.timeout} ms.`);
        memberOptions.timeout = left;
      }
      values.push(result instanceof GroupResult ? await result.join(memberOptions) : await result.get(memberOptions));
    }
    return values as unknown as R;
  }

  /** The same as `join()`. */
  get(options: GetResultOptions = {}): Promise<R> {
    return this.join(options);
  }

  /** Revokes every member (nested groups' too). */
  async revoke(options: { terminate?: boolean; signal?: string } = {}): Promise<void> {
    if (!this.#revoker) {
      throw new KqError('These results were not made by an app, so they cannot revoke; use app.control.revoke(ids).');
    }
    await this.#revoker(this.taskIds(), options);
  }

  /** The ids of every task in the set, nested groups flattened. */
  taskIds(): string[] {
    return this.results.flatMap((result) => (result instanceof GroupResult ? result.taskIds() : [result.id]));
  }
}
brandClass(ResultSet, '@kq/worker:ResultSet');

/**
 * The result of a group (Celery's `GroupResult`): a result set with the group's id, which can be saved in the result
 * backend (`celery-taskset-meta-<id>`) and restored, by kq or Python, from its id alone.
 */
export class GroupResult<R extends readonly unknown[] = unknown[]> extends ResultSet<R> implements ResultNode {
  readonly id: string;
  parent: ResultNode | null = null;
  readonly #backend: ResultBackend | null | ResultBackendSource;

  constructor(id: string, results: readonly SetMember[], backend: ResultBackend | null | ResultBackendSource, revoker?: Revoker) {
    super(results, revoker);
    this.id = id;
    this.#backend = backend;
  }

  /** Celery's `as_tuple()`: `[[id, parent], [member tuples]]`. */
  asTuple(): ResultTuple {
    return [[this.id, this.parent ? this.parent.asTuple() : null], this.results.map((result) => result.asTuple())];
  }

  /** Saves the group in the result backend, so `GroupResult.restore(id)` finds it (Celery's `save`). */
  async save(expiresMs = 86_400_000): Promise<void> {
    await (await this.#groups()).saveGroup(this.id, this.asTuple(), expiresMs);
  }

  /** Deletes the saved group. */
  async delete(): Promise<void> {
    await (await this.#groups()).deleteGroup(this.id);
  }

  /** The saved group with this id (saved by kq or by Python's `GroupResult.save()`), or null. */
  static async restore(id: string, backend: ResultBackend, revoker?: Revoker): Promise<GroupResult | null> {
    if (!backend.groups) throw groupsUnsupported(backend);
    const tuple = await backend.groups.restoreGroup(id);
    if (!tuple) return null;
    const result = resultFromTuple(tuple, backend, revoker);
    return result instanceof GroupResult ? result : new GroupResult(id, [result], backend, revoker);
  }

  async #groups(): Promise<NonNullable<ResultBackend['groups']>> {
    const backend = isBackend(this.#backend) ? this.#backend : await (this.#backend as ResultBackendSource | null)?.backend();
    if (!backend) throw new KqError(`Cannot save group ${this.id}: no result backend is configured.`);
    if (!backend.groups) throw groupsUnsupported(backend);
    return backend.groups;
  }
}
brandClass(GroupResult, '@kq/worker:GroupResult');

/** A result rebuilt from Celery's tuple form (`result_from_tuple`). */
export function resultFromTuple(tuple: ResultTuple, backend: ResultBackend | null | ResultBackendSource, revoker?: Revoker): SetMember {
  const [[id, parentTuple], members] = tuple;
  const result =
    members === null || members === undefined
      ? new AsyncResult(id, backend)
      : new GroupResult(id, members.map((member) => resultFromTuple(member, backend, revoker)), backend, revoker);
  if (parentTuple) result.parent = resultFromTuple(parentTuple, backend, revoker);
  return result;
}

function isBackend(value: ResultBackend | null | ResultBackendSource): value is ResultBackend {
  return value !== null && typeof (value as Partial<ResultBackend>).waitFor === 'function';
}

function groupsUnsupported(backend: ResultBackend): KqError {
  return new KqError(`The ${backend.name} result backend does not keep group results; use the Redis backend to save and restore groups.`);
}
