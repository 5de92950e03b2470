import type { WorkerStep } from '../runtime/bootstep';
import type { WorkerHost } from '../runtime/worker-host';
import type { ClusterContext } from './cluster-context';
import { Gossip } from './gossip';

/** The Gossip consumer step; on by default when the broker has fanout (Celery: amqp and redis). */
export class GossipStep implements WorkerStep {
  readonly name = 'Gossip';
  readonly #context: ClusterContext;
  #gossip: Gossip | undefined;

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  get gossip(): Gossip | undefined {
    return this.#gossip;
  }

  async start(worker: WorkerHost): Promise<void> {
    if (!this.#context.owns(worker) || this.#context.options.gossip === false) return;
    const transport = await worker.app.connection.transport();
    if (!transport.capabilities.fanout) return;
    const { heartbeatInterval, gossipInterval, gossipWatchers } = this.#context.options;
    const gossip = new Gossip(worker, this.#context.dispatcher, {
      ...(gossipInterval === undefined ? {} : { interval: gossipInterval }),
      ...(heartbeatInterval === undefined ? {} : { queueTtl: heartbeatInterval, heartbeatInterval }),
      ...(gossipWatchers === undefined ? {} : { watchers: gossipWatchers }),
    });
    try {
      await gossip.start(this.#context.neighbours);
    } catch (error) {
      // Following the others is not worth refusing to run tasks over: carry on without it, loudly.
      worker.log.error(`gossip: could not start, running without it: ${error instanceof Error ? error.message : String(error)}`);
      await gossip.stop().catch(() => undefined);
      return;
    }
    this.#gossip = gossip;
    this.#context.gossip = gossip;
  }

  async stop(): Promise<void> {
    const gossip = this.#gossip;
    this.#gossip = undefined;
    await gossip?.stop();
  }
}
