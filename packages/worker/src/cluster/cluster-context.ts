import { processWide } from '@kq/core';
import type { EventDispatcher } from '../events/event-dispatcher';
import type { WorkerHost } from '../runtime/worker-host';
import type { ClusterOptions } from './cluster-options';
import type { Gossip } from './gossip';
import type { TaskOverrides } from './registered-tasks';

/**
 * Which cluster context drives each worker: one set of cluster steps per worker, even if two were given — from two
 * copies of @kq/worker too, hence process-wide.
 */
const owners = processWide('kq.cluster-owners.v1', () => new WeakMap<WorkerHost, ClusterContext>());

/**
 * The cluster side of a running worker started with cluster steps: its event dispatcher and Gossip (e.g.
 * `clusterOf(worker)?.gossip?.on('node-lost', ...)`), or undefined.
 */
export function clusterOf(worker: WorkerHost): ClusterContext | undefined {
  return owners.get(worker);
}

/**
 * What the cluster steps of one worker share: the options, the event dispatcher (made by the Events step), the
 * Gossip instance, and the task attributes changed by remote control. One context belongs to one worker.
 */
export class ClusterContext {
  readonly options: ClusterOptions;
  dispatcher: EventDispatcher | undefined;
  /** Set once Gossip has started. */
  gossip: Gossip | undefined;
  /** True while the Gossip step starts (the control node may answer meanwhile). */
  gossipStarting = false;
  /**
   * The other nodes Mingle heard of (those that answered its hello and the peers the watchers named), by node name,
   * with what is known of each (`sw_ident: 'kq'` for a watcher); empty without Mingle.
   */
  neighbours: ReadonlyMap<string, Record<string, unknown>> = new Map();
  /** Task attributes changed by `rate_limit` / `time_limit`, shown by `inspect registered`. */
  readonly overrides = new Map<string, TaskOverrides>();
  #worker: WorkerHost | undefined;
  #warned = false;

  constructor(options: ClusterOptions = {}) {
    this.options = { ...options };
  }

  get worker(): WorkerHost | undefined {
    return this.#worker;
  }

  /**
   * Binds this context to `worker` when its first step starts. False when another context already drives that
   * worker (cluster steps passed twice): the steps of this one then do nothing.
   */
  claim(worker: WorkerHost): boolean {
    const owner = owners.get(worker);
    if (owner && owner !== this) {
      if (!this.#warned) {
        this.#warned = true;
        worker.log.warning('cluster steps were given twice for this worker; ignoring the second set');
      }
      return false;
    }
    owners.set(worker, this);
    this.#worker = worker;
    return true;
  }

  /** True when this context drives `worker`. */
  owns(worker: WorkerHost): boolean {
    return owners.get(worker) === this;
  }

  /** Unbinds from `worker` once its steps stopped, so the worker may be started again with fresh steps. */
  release(worker: WorkerHost): void {
    if (owners.get(worker) === this) owners.delete(worker);
    this.dispatcher = undefined;
    this.gossip = undefined;
    this.gossipStarting = false;
    this.neighbours = new Map();
  }

  overridesOf(task: string): TaskOverrides {
    let overrides = this.overrides.get(task);
    if (!overrides) {
      overrides = {};
      this.overrides.set(task, overrides);
    }
    return overrides;
  }
}
