import type { BrokerNode } from './broker-node';
import { waitUntil } from './broker-node';
import { RabbitNode } from './rabbit-node';

/**
 * A three-node RabbitMQ cluster of the suite's own (three private nodes, joined to the first), used with quorum queues:
 * the task queue keeps its messages on a majority of nodes, so losing one node loses nothing. Workers and producers
 * get all three nodes in their URL (Kombu's broker list) and fail over between them. `failover()` kills the first
 * node, where the clients connect first and where the queue's leader starts.
 */
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

  /** Kills the first node outright (SIGKILL); the other two keep the quorum queue and the clients fail over. */
  async failover(): Promise<void> {
    const first = this.nodes[0] as RabbitNode;
    this.#killed.add(first);
    await first.kill();
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
