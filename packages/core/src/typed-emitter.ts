import { EventEmitter } from 'node:events';

/** Event name → listener arguments. */
export type EventMap = { [event: string]: unknown[] };

/**
 * A Node EventEmitter whose `on`/`off`/`once`/`emit` are checked against an event map, so a typo in an event
 * name or a listener's arguments is a compile error rather than a silent no-op.
 */
export class TypedEmitter<Events extends EventMap> {
  readonly #emitter = new EventEmitter();

  on<E extends keyof Events & string>(event: E, listener: (...args: Events[E]) => void): this {
    this.#emitter.on(event, listener as (...args: unknown[]) => void);
    return this;
  }

  once<E extends keyof Events & string>(event: E, listener: (...args: Events[E]) => void): this {
    this.#emitter.once(event, listener as (...args: unknown[]) => void);
    return this;
  }

  off<E extends keyof Events & string>(event: E, listener: (...args: Events[E]) => void): this {
    this.#emitter.off(event, listener as (...args: unknown[]) => void);
    return this;
  }

  listenerCount<E extends keyof Events & string>(event: E): number {
    return this.#emitter.listenerCount(event);
  }

  /**
   * Emits an event. An `error` event with no listener is dropped instead of thrown (Node's default would crash
   * the process): errors that matter are also surfaced through the promises of the operations that failed.
   */
  protected emit<E extends keyof Events & string>(event: E, ...args: Events[E]): boolean {
    if (event === 'error' && this.#emitter.listenerCount('error') === 0) return false;
    return this.#emitter.emit(event, ...args);
  }
}
