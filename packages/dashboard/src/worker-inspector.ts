import type { App } from '@kq/worker';
import type { FleetState } from './fleet-state';

/** What Flower asks every worker (its `Inspector.methods`), stored under these names by worker. */
export const INSPECT_METHODS = ['stats', 'active_queues', 'registered', 'scheduled', 'active', 'reserved', 'revoked', 'conf'] as const;

/**
 * Asks the workers (all, or one) what Flower's inspector asks and keeps the answers in the fleet state: one broadcast
 * per method, in parallel, each waiting `timeoutMs` for replies. A call made while a run for the same target is under
 * way waits for one more run after it (whose answers are at least as new as the call); calls made meanwhile share it.
 */
export class WorkerInspector {
  readonly #app: App;
  readonly #state: FleetState;
  readonly #timeoutMs: number;
  readonly #running = new Map<string, { current: Promise<void>; next?: Promise<void> }>();

  constructor(app: App, state: FleetState, timeoutMs: number) {
    this.#app = app;
    this.#state = state;
    this.#timeoutMs = timeoutMs;
  }

  inspect(workername?: string): Promise<void> {
    const key = workername ?? '';
    const runs = this.#running.get(key);
    if (!runs) {
      const current = this.#inspectAll(workername).finally(() => this.#finished(key, current));
      this.#running.set(key, { current });
      return current;
    }
    runs.next ??= runs.current.catch(() => undefined).then(() => {
      const next = runs.next as Promise<void>;
      runs.current = next;
      runs.next = undefined;
      return this.#inspectAll(workername).finally(() => this.#finished(key, next));
    });
    return runs.next;
  }

  #finished(key: string, run: Promise<void>): void {
    const runs = this.#running.get(key);
    if (runs && runs.current === run && !runs.next) this.#running.delete(key);
  }

  async #inspectAll(workername: string | undefined): Promise<void> {
    await Promise.all(
      INSPECT_METHODS.map(async (method) => {
        const replies = await this.#app.control.broadcast(method, {
          reply: true,
          timeout: this.#timeoutMs,
          ...(workername ? { destination: [workername] } : {}),
        });
        for (const reply of replies) {
          for (const [host, value] of Object.entries(reply)) {
            const info = this.#state.inspected.get(host) ?? {};
            info[method] = value;
            info['timestamp'] = Date.now() / 1000;
            this.#state.inspected.set(host, info);
          }
        }
      }),
    );
    this.#state.version++;
  }
}
