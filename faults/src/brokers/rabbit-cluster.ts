import type { BrokerNode } from './broker-node';
import { waitUntil } from './broker-node';
import { RabbitNode } from './rabbit-node';

/**
 * A three-node RabbitMQ cluster of the suite's own (three private nodes, joined to the first), used with quorum queues:
 * the task queue keeps its messages on a majority of nodes, so losing one node loses nothing. Workers and producers
 * get all three nodes in their URL (Kombu's broker list) and fail over between them. `failover()` kills the node that
 * leads the task queue, as RabbitMQ reports it (not assumed): losing the leader is the case that forces a leader
 * election as well as the clients' reconnect.
 */
interface QueueListing {
  name: string;
  type: string;
  leader?: string;
  messages?: number;
}

export class RabbitCluster implements BrokerNode {
  readonly kind = 'rabbit-cluster' as const;
  readonly nodes: readonly RabbitNode[];
  readonly queueArguments = { 'x-queue-type': 'quorum' };
  #killed = new Set<RabbitNode>();

  constructor(port: number) {
    this.nodes = [0, 1, 2].map((offset) => new RabbitNode(port + offset));
  }

  get url(): string {
    return this.nodes.map((node) => node.url).join(';');
  }

  async start(): Promise<void> {
    const [first, ...rest] = this.nodes as [RabbitNode, ...RabbitNode[]];
    await Promise.all(this.nodes.map((node) => node.start()));
    for (const node of rest) {
      await node.ctl('stop_app');
      await node.ctl('join_cluster', first.nodeName);
      await node.ctl('start_app');
    }
    await waitUntil(
      () => first.ctl('cluster_status', '--formatter', 'json').then((out) => (JSON.parse(out) as { running_nodes?: string[] }).running_nodes?.length === 3, () => false),
      60_000,
      'the three RabbitMQ nodes to form a cluster',
    );
  }

  /** The node RabbitMQ names as leader of the quorum queue holding the most messages (the task queue mid-drain). */
  async queueLeader(): Promise<RabbitNode> {
    const first = this.nodes[0] as RabbitNode;
    const listing = JSON.parse(await first.ctl('list_queues', 'name', 'type', 'leader', 'messages', '--formatter', 'json')) as QueueListing[];
    const busiest = listing.filter((queue) => queue.type === 'quorum').sort((a, b) => (b.messages ?? 0) - (a.messages ?? 0))[0];
    const leader = this.nodes.find((node) => node.nodeName === busiest?.leader);
    if (!leader) throw new Error(`no quorum queue with a known leader on the cluster (rabbitmqctl listed ${JSON.stringify(listing)})`);
    return leader;
  }

  /**
   * Kills the task queue's leader outright (SIGKILL); the other two elect a new leader from their copies and the
   * clients connected to it fail over. The clients connect to the first node first and declare the queue there, so
   * this is usually the first node; which node it was is logged.
   */
  async failover(): Promise<void> {
    const leader = await this.queueLeader();
    console.log(`  killing ${leader.nodeName}, the task queue's leader${leader === this.nodes[0] ? ' and the clients\' first node' : ''}`);
    this.#killed.add(leader);
    await leader.kill();
  }

  async kill(): Promise<void> {
    await this.failover();
  }

  pause(): void {
    for (const node of this.#live()) node.pause();
  }

  resume(): void {
    for (const node of this.#live()) node.resume();
  }

  async killConnections(): Promise<number> {
    let closed = 0;
    for (const node of this.#live()) closed += await node.killConnections();
    return closed;
  }

  async destroy(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.destroy().catch(() => undefined)));
  }

  #live(): RabbitNode[] {
    return this.nodes.filter((node) => !this.#killed.has(node));
  }
}
