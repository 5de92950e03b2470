import { brandClass } from '@kq/core';
import type { WorkerStep } from '../runtime/bootstep';
import type { WorkerHost } from '../runtime/worker-host';
import { ClusterContext } from './cluster-context';
import type { ClusterOptions } from './cluster-options';
import { EventsStep } from './events-step';
import { GossipStep } from './gossip-step';
import { HeartStep } from './heart';
import { MingleStep } from './mingle';
import { RemoteControlStep } from './remote-control';
import { StateDbStep } from './state-db';

/** Binds the shared context to the worker first and releases it last (steps stop in reverse order). */
export class ClusterBindingStep implements WorkerStep {
  readonly name = 'Cluster';
  readonly #context: ClusterContext;

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  async start(worker: WorkerHost): Promise<void> {
    this.#context.claim(worker);
  }

  async stop(worker: WorkerHost): Promise<void> {
    this.#context.release(worker);
  }
}
brandClass(ClusterBindingStep, '@kq/worker:ClusterBindingStep');

/**
 * The steps that make a worker part of a Celery fleet, in Celery's order (docs/wire.md#mingle-heartbeats-and-gossip):
 * state file, event dispatcher with task events, Mingle, Gossip, heartbeats, and the full set of remote-control
 * commands (which override the worker's basic ones by name). Pass them as `app.worker({ steps: clusterSteps({...}) })`.
 *
 * The worker starts them after connecting and before its control node and task consumer, and stops them in reverse:
 * `worker-offline` goes out after consuming stopped, the state file is written last.
 */
export function clusterSteps(options: ClusterOptions = {}): WorkerStep[] {
  const context = new ClusterContext(options);
  return [
    new ClusterBindingStep(context),
    ...(options.statedb ? [new StateDbStep(context, options.statedb)] : []),
    new EventsStep(context),
    new MingleStep(context),
    new GossipStep(context),
    new HeartStep(context),
    new RemoteControlStep(context),
  ];
}

/** True for the first step of a `clusterSteps()` set. */
export function isClusterStep(step: WorkerStep): boolean {
  return step instanceof ClusterBindingStep;
}

/**
 * A worker's steps with the cluster steps in front — unless `cluster` is false, or `steps` already holds a set from
 * `clusterSteps()` (given explicitly, it wins). What `Worker` uses for its default steps.
 */
export function withClusterSteps(steps: readonly WorkerStep[] = [], cluster: ClusterOptions | false = {}): WorkerStep[] {
  if (cluster === false || steps.some(isClusterStep)) return [...steps];
  return [...clusterSteps(cluster), ...steps];
}
