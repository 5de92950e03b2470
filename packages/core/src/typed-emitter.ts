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
(TypedEmitter.prototype as EventEmitter).emit = function emit(this: EventEmitter, event: string | symbol, ...args: unknown[]): boolean {
  if (event === 'error' && this.listenerCount('error') === 0) return false;
  return EventEmitter.prototype.emit.call(this, event, ...args);
};
