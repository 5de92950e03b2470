import { setTimeout as sleep } from 'node:timers/promises';
import { hideSecrets, type App } from '@kq/worker';
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
  readonly #running = new Map<string, { current: Promise<ReadonlySet<string>>; next?: Promise<ReadonlySet<string>> }>();
  #closed = false;

  constructor(app: App, state: FleetState, timeoutMs: number) {
    this.#app = app;
    this.#state = state;
    this.#timeoutMs = timeoutMs;
  }

  /** Resolves to the workers that answered every call of the run. */
  inspect(workername?: string): Promise<ReadonlySet<string>> {
    const key = workername ?? '';
    const runs = this.#running.get(key);
    if (!runs) {
      const current = this.#inspectAll(workername).finally(() => this.#finished(key, current));
      this.#running.set(key, { current });
      return current;
    }
    runs.next ??= runs.current.catch(() => undefined).then(() => {
      const next = runs.next as Promise<ReadonlySet<string>>;
      runs.current = next;
      runs.next = undefined;
      return this.#inspectAll(workername).finally(() => this.#finished(key, next));
    });
    return runs.next;
  }

  /**
   * Inspects a worker that just came online (its `worker-online` event), so that `/api/workers` lists it at once
   * rather than at the next round. One that does not answer is asked again, up to `attempts` asks in all, an inspect
   * timeout apart: Celery's worker sends the event before it listens to remote control (its Heart step starts
   * before its Control step), so the first ask can come too early. Resolves to whether it answered every call.
   */
  async inspectNewcomer(hostname: string, attempts = 3): Promise<boolean> {
    for (let attempt = 1; !this.#closed; attempt++) {
      const asked = Date.now();
      // A worker busy starting may answer some calls in time and not others: until it answers all, it is asked again.
      if ((await this.inspect(hostname)).has(hostname)) return true;
      if (attempt >= attempts) break;
      // An ask ends at once when no worker listens on the control exchange yet (the fleet's first one starting):
      // the next one waits its turn, the inspect timeout after the last.
      await sleep(Math.max(0, this.#timeoutMs - (Date.now() - asked)), undefined, { ref: false });
    }
    return false;
  }

  /** No more asking again (the dashboard is closing). */
  close(): void {
    this.#closed = true;
  }

  #finished(key: string, run: Promise<ReadonlySet<string>>): void {
    const runs = this.#running.get(key);
    if (runs && runs.current === run && !runs.next) this.#running.delete(key);
  }

  async #inspectAll(workername: string | undefined): Promise<ReadonlySet<string>> {
    const answers = new Map<string, number>();
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
            info[method] = shown(method, value);
            info['timestamp'] = Date.now() / 1000;
            this.#state.inspected.set(host, info);
            answers.set(host, (answers.get(host) ?? 0) + 1);
          }
        }
      }),
    );
    this.#state.version++;
    return new Set([...answers].filter(([, count]) => count === INSPECT_METHODS.length).map(([host]) => host));
  }
}

/**
 * A reply as the dashboard keeps and serves it: settings and the broker's description (Python's `stats` gives its
 * transport options and alternate URLs as configured) with their secrets masked, whatever the worker masked itself.
 */
function shown(method: string, value: unknown): unknown {
  if (method === 'conf') return hideSecrets(value);
  if (method === 'stats' && value !== null && typeof value === 'object' && 'broker' in value) return { ...value, broker: hideSecrets(value.broker) };
  return value;
}
