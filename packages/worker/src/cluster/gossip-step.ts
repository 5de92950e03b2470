import type { StepFinishing, WorkerStep } from '../runtime/bootstep';
import type { WorkerHost } from '../runtime/worker-host';
import type { ClusterContext } from './cluster-context';
import { Gossip } from './gossip';

/** The Gossip consumer step; on by default when the broker has fanout (Celery: amqp and redis). */
export class GossipStep implements WorkerStep {
  readonly name = 'Gossip';
  readonly #context: ClusterContext;
  #gossip: Gossip | undefined;
  #starting: Promise<void> | undefined;

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  get gossip(): Gossip | undefined {
    return this.#gossip;
  }

  /**
   * Starts following the fleet without holding up the steps after it: Gossip's queue is declared, bound and consumed
   * while the control node and the task consumer start (the worker is ready once all have).
   */
  async start(worker: WorkerHost): Promise<StepFinishing | void> {
    if (!this.#context.owns(worker) || this.#context.options.gossip === false) return;
    const transport = await worker.app.connection.transport();
    if (!transport.capabilities.fanout) return;
    const { heartbeat, heartbeatInterval, gossipInterval, gossipWatchers } = this.#context.options;
    // A worker that sends no heartbeats never watches (nor says it does): the peers it would learn of by Mingle and
    // notices rather than heartbeats (a fleet run with --without-heartbeat) it could only judge lost, again and again.
    const watchers = heartbeat === false ? 0 : gossipWatchers;
    const gossip = new Gossip(worker, this.#context.dispatcher, {
      ...(gossipInterval === undefined ? {} : { interval: gossipInterval }),
      ...(heartbeatInterval === undefined ? {} : { queueTtl: heartbeatInterval, heartbeatInterval }),
      ...(watchers === undefined ? {} : { watchers }),
    });
    this.#context.gossipStarting = true;
    this.#starting = this.#startGossip(worker, gossip);
    return { finishing: this.#starting };
  }

  async #startGossip(worker: WorkerHost, gossip: Gossip): Promise<void> {
    try {
      await gossip.start(this.#context.neighbours);
    } catch (error) {
      // Following the others is not worth refusing to run tasks over: carry on without it, loudly.
      worker.log.error(`gossip: could not start, running without it: ${error instanceof Error ? error.message : String(error)}`);
      await gossip.stop().catch(() => undefined);
      return;
    } finally {
      this.#context.gossipStarting = false;
    }
    this.#gossip = gossip;
    this.#context.gossip = gossip;
  }

  async stop(): Promise<void> {
    await this.#starting;
    const gossip = this.#gossip;
    this.#gossip = undefined;
    await gossip?.stop();
  }
}
