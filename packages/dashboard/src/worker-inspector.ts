import { setTimeout as sleep } from 'node:timers/promises';
import { hideSecrets, type App } from '@kq/worker';
import type { FleetState } from './fleet-state';

/** What Flower asks every worker (its `Inspector.methods`), stored under these names by worker. */
export const INSPECT_METHODS = ['stats', 'active_queues', 'registered', 'scheduled', 'active', 'reserved', 'revoked', 'conf'] as const;
export type InspectMethod = (typeof INSPECT_METHODS)[number];

/**
 * What changes while a worker runs, asked every round. `registered` and `conf` are fixed for a worker's life, and
 * `active_queues` changes only on `add_consumer` / `cancel_consumer`: those are asked when a worker comes online, on
 * `?refresh=1`, after the dashboard sent a consumer change, and every `fullRoundEvery` rounds (each method asked costs
 * every worker a reply, and the broker the traffic).
 */
export const CHANGING_METHODS: readonly InspectMethod[] = ['stats', 'scheduled', 'active', 'reserved', 'revoked'];

export interface WorkerInspectorOptions {
  /** Every how many rounds (`round()`) all of `INSPECT_METHODS` are asked; 1 asks them all every round. */
  fullRoundEvery?: number;
}

/**
 * Asks the workers (all, or some) what Flower's inspector asks and keeps the answers in the fleet state: one broadcast
 * per method, in parallel, each waiting `timeoutMs` for replies. A call made while a run for the same target is under
 * way waits for one more run after it (whose answers are at least as new as the call); calls made meanwhile share it.
 *
 * Between full rounds a round asks only the workers whose state moved since they last answered, as their events show
 * it (`workerSignature`): an idle worker's answers cannot have changed but for its clocks (`stats`' uptime and
 * rusage, refreshed by the full rounds), so an idle fleet's round costs no broadcast and no reply.
 */
export class WorkerInspector {
  readonly #app: App;
  readonly #state: FleetState;
  readonly #timeoutMs: number;
  readonly #running = new Map<string, { current: Promise<ReadonlySet<string>>; next?: Promise<ReadonlySet<string>> }>();
  readonly #fullRoundEvery: number;
  /** The `workerSignature` each worker had when it was last asked and answered every call. */
  readonly #answered = new Map<string, string>();
  /** Newcomers gathering for the next ask, which goes once the ask under way has ended (see `#askNewcomer`). */
  #gathering: { readonly hosts: Set<string>; readonly answered: Promise<ReadonlySet<string>> } | undefined;
  #newcomersAsked: Promise<unknown> = Promise.resolve();
  #rounds = 0;
  #queuesChanged = false;
  #closed = false;

  constructor(app: App, state: FleetState, timeoutMs: number, options: WorkerInspectorOptions = {}) {
    this.#app = app;
    this.#state = state;
    this.#timeoutMs = timeoutMs;
    this.#fullRoundEvery = Math.max(1, Math.round(options.fullRoundEvery ?? 1));
  }

  /**
   * The dashboard's periodic round over every worker: all of `INSPECT_METHODS` on the first round and every
   * `fullRoundEvery`th after it, `CHANGING_METHODS` (with `active_queues` after `queuesChanged()`) in between.
   */
  round(): Promise<ReadonlySet<string>> {
    const full = this.#rounds % this.#fullRoundEvery === 0;
    this.#rounds++;
    const methods: readonly InspectMethod[] = full ? INSPECT_METHODS : this.#queuesChanged ? [...CHANGING_METHODS, 'active_queues'] : CHANGING_METHODS;
    this.#queuesChanged = false;
    if (full) {
      // Forget the workers the state no longer holds, so the map does not grow with every hostname ever seen.
      for (const host of this.#answered.keys()) if (!this.#state.cluster.workers.has(host)) this.#answered.delete(host);
      return this.#inspect(undefined, methods);
    }
    const alive = this.#state.cluster.aliveWorkers().map((worker) => worker.hostname);
    const moved = alive.filter((host) => this.#answered.get(host) !== workerSignature(this.#state, host));
    if (moved.length === 0) return Promise.resolve(new Set());
    // Everyone moved: one broadcast without a destination list (shorter, and a worker not yet seen answers too).
    return this.#inspect(moved.length === alive.length ? undefined : moved, methods);
  }

  /** A worker's queues changed (the dashboard sent `add_consumer` or `cancel_consumer`): the next round asks them. */
  queuesChanged(): void {
    this.#queuesChanged = true;
  }

  /**
   * The dashboard changed a worker's state in a way its events may not show (a pool or consumer command to it, or a
   * revoke to all when no hostname is given): the next round asks it again.
   */
  changed(hostname?: string): void {
    if (hostname === undefined) this.#answered.clear();
    else this.#answered.delete(hostname);
  }

  /** Resolves to the workers that answered every call of the run. */
  inspect(workername?: string, methods: readonly InspectMethod[] = INSPECT_METHODS): Promise<ReadonlySet<string>> {
    return this.#inspect(workername === undefined ? undefined : [workername], methods);
  }

  #inspect(destination: readonly string[] | undefined, methods: readonly InspectMethod[]): Promise<ReadonlySet<string>> {
    const key = `${destination?.join(',') ?? ''}\n${methods.join(',')}`;
    const runs = this.#running.get(key);
    if (!runs) {
      const current = this.#inspectAll(destination, methods).finally(() => this.#finished(key, current));
      this.#running.set(key, { current });
      return current;
    }
    runs.next ??= runs.current.catch(() => undefined).then(() => {
      const next = runs.next as Promise<ReadonlySet<string>>;
      runs.current = next;
      runs.next = undefined;
      return this.#inspectAll(destination, methods).finally(() => this.#finished(key, next));
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
      if ((await this.#askNewcomer(hostname)).has(hostname)) return true;
      if (attempt >= attempts) break;
      // An ask ends at once when no worker listens on the control exchange yet (the fleet's first one starting):
      // the next one waits its turn, the inspect timeout after the last.
      await sleep(Math.max(0, this.#timeoutMs - (Date.now() - asked)), undefined, { ref: false });
    }
    return false;
  }

  /**
   * Asks a newcomer with the others that came online meanwhile: the first at once, those arriving while an ask is under
   * way together in the next, one destination list for all. Asked one by one, a fleet of 200 starting ten at a time
   * cost 1,600 broadcasts, each delivered to every worker's pidbox queue (fanout), all while the fleet was starting.
   */
  #askNewcomer(hostname: string): Promise<ReadonlySet<string>> {
    let batch = this.#gathering;
    if (!batch) {
      const hosts = new Set<string>();
      const answered = this.#newcomersAsked.then(() => {
        // Asked now: later newcomers gather for the next ask.
        if (this.#gathering?.hosts === hosts) this.#gathering = undefined;
        return this.#inspect([...hosts].sort(), INSPECT_METHODS);
      });
      batch = { hosts, answered };
      this.#gathering = batch;
      this.#newcomersAsked = answered.catch(() => undefined);
    }
    batch.hosts.add(hostname);
    return batch.answered;
  }

  /** No more asking again (the dashboard is closing). */
  close(): void {
    this.#closed = true;
  }

  #finished(key: string, run: Promise<ReadonlySet<string>>): void {
    const runs = this.#running.get(key);
    if (runs && runs.current === run && !runs.next) this.#running.delete(key);
  }

  async #inspectAll(destination: readonly string[] | undefined, methods: readonly InspectMethod[]): Promise<ReadonlySet<string>> {
    // Taken before asking: an event that arrives while the replies come in makes the next round ask again.
    const asked = new Map([...(destination ?? this.#state.cluster.workers.keys())].map((host) => [host, workerSignature(this.#state, host)]));
    const answers = new Map<string, number>();
    await Promise.all(
      methods.map(async (method) => {
        const replies = await this.#app.control.broadcast(method, {
          reply: true,
          timeout: this.#timeoutMs,
          ...(destination ? { destination: [...destination] } : {}),
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
    const complete = new Set([...answers].filter(([, count]) => count === methods.length).map(([host]) => host));
    // A worker the state did not know when asked is asked again by the next round (its signature then is unknown).
    for (const host of complete) {
      const signature = asked.get(host);
      if (signature !== undefined) this.#answered.set(host, signature);
    }
    return complete;
  }
}

/**
 * What the dashboard sees of a worker's state without asking it: its heartbeats' `active` and `processed` (Celery's
 * heartbeat fields, kq and Python workers alike) and how many events other than heartbeats it sent (a task received,
 * started, finished or revoked; the worker coming online again). Equal signatures: nothing the inspect calls between
 * full rounds report has changed, but for the clocks in `stats`.
 */
export function workerSignature(state: FleetState, hostname: string): string {
  const worker = state.cluster.workers.get(hostname);
  let events = 0;
  for (const [type, count] of state.counter.get(hostname) ?? []) if (type !== 'worker-heartbeat') events += count;
  return `${worker?.active ?? '-'}/${worker?.processed ?? '-'}/${events}`;
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
