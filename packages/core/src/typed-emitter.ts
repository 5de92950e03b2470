import { EventEmitter } from 'node:events';

/** Event name → listener arguments. */
export type EventMap<Events> = Record<keyof Events, unknown[]>;

/**
 * Node's EventEmitter typed by its event map (`on`/`off`/`once`/`emit` are checked against it, so a typo in an event
 * name or a listener's arguments is a compile error), with one difference: an `error` event with no listener is
 * dropped instead of thrown (Node's default would crash the process); errors that matter are also surfaced through
 * the promises of the operations that failed.
 */
export class TypedEmitter<Events extends EventMap<Events>> extends EventEmitter<Events> {}

// Patched on the prototype rather than overridden, so Node's own typing of `emit` stays as it is.
// Its arguments are passed on as they came (`apply` with `arguments`), not copied into an array and spread again:
// a worker emits several events per task.
const emitEvent = EventEmitter.prototype.emit;
(TypedEmitter.prototype as EventEmitter).emit = function emit(this: EventEmitter, event: string | symbol): boolean {
  if (event === 'error' && this.listenerCount('error') === 0) return false;
  // eslint-disable-next-line prefer-rest-params -- the point: no copy of the arguments per event
  return emitEvent.apply(this, arguments as unknown as Parameters<typeof emitEvent>);
};
