import { brandClass } from '@kq/core';
import type { SignatureJson } from '../protocol/index';
import type { AsyncResult, GroupResult } from '../results/index';
import type { CanvasAppView } from '../contract/app-contract';
import { Group } from './group';
import { Signature, type AnySignature } from './signature';
import type { WireOptions } from './signature-options';

/**
 * One task message that runs a task over every item, in the worker, one after another (Celery's `xmap` /
 * `xstarmap`, run by the built-in `celery.map` / `celery.starmap` tasks): cheap for many tiny calls, not parallel.
 */
export class MapSignature<R = unknown> extends Signature<R[]> {
  constructor(kind: 'xmap' | 'xstarmap', task: AnySignature | SignatureJson, items: readonly unknown[], options: Readonly<WireOptions> = {}, app?: CanvasAppView) {
    const taskJson = task instanceof Signature ? task.toJSON() : task;
    super(kind === 'xmap' ? 'celery.map' : 'celery.starmap', [], { task: taskJson, it: [...items] }, {}, true, kind, app ?? (task instanceof Signature ? task.app : undefined));
    this.options = { ...options }; // a composite's options travel as given (see withWireOptions)
  }

  override applyWire(args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, options: Readonly<WireOptions>): Promise<AsyncResult<R[]>> {
    // Routed by the task it maps, as Celery's `route_name`.
    return super.applyWire(args, kwargs, { route_name: (this.kwargs['task'] as SignatureJson).task, ...options });
  }

  protected override rebuild(_args: unknown[], kwargs: Record<string, unknown>, options: WireOptions): this {
    return new MapSignature(this.subtaskType === 'xmap' ? 'xmap' : 'xstarmap', kwargs['task'] as SignatureJson, kwargs['it'] as unknown[], options, this.app) as this;
  }
}
brandClass(MapSignature, '@kq/worker:MapSignature');

/**
 * The items split into parts of `n`, each part one `celery.starmap` message, sent as a group (Celery's `chunks`):
 * 10 000 small calls as 100 messages. `join()` gives a list per part.
 */
export class Chunks<R = unknown> extends Signature<R[][], GroupResult<R[][]>> {
  constructor(task: AnySignature | SignatureJson, items: readonly (readonly unknown[])[], size: number, options: Readonly<WireOptions> = {}, app?: CanvasAppView) {
    const taskJson = task instanceof Signature ? task.toJSON() : task;
    super('celery.chunks', [], { task: taskJson, it: items.map((item) => [...item]), n: size }, {}, true, 'chunks', app ?? (task instanceof Signature ? task.app : undefined));
    this.options = { ...options }; // a composite's options travel as given (see withWireOptions)
  }

  /** The group of `celery.starmap` parts this sends. */
  group(): Group<R[][]> {
    const items = this.kwargs['it'] as unknown[][];
    const size = Math.max(1, Number(this.kwargs['n']));
    const parts: MapSignature[] = [];
    for (let start = 0; start < items.length; start += size) {
      parts.push(new MapSignature('xstarmap', this.kwargs['task'] as SignatureJson, items.slice(start, start + size), {}, this.app));
    }
    return new Group<R[][]>(parts, {}, this.app);
  }

  override applyWire(args: readonly unknown[], kwargs: Readonly<Record<string, unknown>>, options: Readonly<WireOptions>): Promise<GroupResult<R[][]>> {
    return this.group().applyWire(args, kwargs, { route_name: (this.kwargs['task'] as SignatureJson).task, ...this.options, ...options });
  }

  protected override rebuild(_args: unknown[], kwargs: Record<string, unknown>, options: WireOptions): this {
    return new Chunks(kwargs['task'] as SignatureJson, kwargs['it'] as unknown[][], Number(kwargs['n']), options, this.app) as this;
  }
}
brandClass(Chunks, '@kq/worker:Chunks');

Signature.registerType('xmap', (json, app) => new MapSignature('xmap', json.kwargs['task'] as SignatureJson, (json.kwargs['it'] as unknown[]) ?? [], json.options ?? {}, app));
Signature.registerType('xstarmap', (json, app) => new MapSignature('xstarmap', json.kwargs['task'] as SignatureJson, (json.kwargs['it'] as unknown[]) ?? [], json.options ?? {}, app));
Signature.registerType('chunks', (json, app) => new Chunks(json.kwargs['task'] as SignatureJson, (json.kwargs['it'] as unknown[][]) ?? [], Number(json.kwargs['n'] ?? 1), json.options ?? {}, app));
