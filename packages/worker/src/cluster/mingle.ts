import { pythonRepr, type MailboxReply } from '@kq/core';
import type { WorkerStep } from '../runtime/bootstep';
import type { WorkerHost } from '../runtime/worker-host';
import type { ClusterContext } from './cluster-context';

/** Transports Celery runs Mingle on. */
const MINGLE_TRANSPORTS: ReadonlySet<string> = new Set(['amqp', 'redis']);

/** What one neighbour answered to `hello`. */
export interface MingleReply {
  clock?: unknown;
  revoked?: unknown;
}

/**
 * Celery's `Mingle`: at start-up, before consuming, the worker broadcasts `hello` with its revoked set
 * (docs/wire.md#mingle-heartbeats-and-gossip) and waits until a second passes without a reply. From each neighbour's
 * reply it adopts the clock (`adjust`, or `forward` when there is none) and merges the revoked tasks, so a task revoked
 * while this worker was down is not run. It runs before the worker's own control node listens, so it never answers
 * its own hello.
 */
export class MingleStep implements WorkerStep {
  readonly name = 'Mingle';
  readonly #context: ClusterContext;
  /** Node names synced with at the last start. */
  synced: string[] = [];

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  async start(worker: WorkerHost): Promise<void> {
    if (!this.#context.owns(worker)) return;
    const transport = await worker.app.connection.transport();
    const enabled = this.#context.options.mingle ?? MINGLE_TRANSPORTS.has(transport.name);
    if (!enabled || !transport.capabilities.fanout) return;
    const neighbours = new Map<string, unknown>();
    this.synced = await mingle(worker, (this.#context.options.mingleTimeout ?? 1) * 1000, neighbours);
    // Gossip starts from who answered: a worker that follows no heartbeats learns its peers from these and from
    // their online events.
    this.#context.neighbours = neighbours;
  }

  async stop(): Promise<void> {}
}

/**
 * Says hello to the other workers and syncs with their replies; resolves to the node names synced with. `neighbours`,
 * when given, receives every other node's reply by node name.
 */
export async function mingle(worker: WorkerHost, timeoutMs = 1000, neighbours?: Map<string, unknown>): Promise<string[]> {
  const { log } = worker;
  log.info('mingle: searching for neighbors');
  let replies: MailboxReply[];
  try {
    replies = await worker.app.control.mailbox.broadcast('hello', {
      arguments: { from_node: worker.hostname, revoked: worker.state.revoked.toWire() },
      reply: true,
      timeout: timeoutMs,
    });
  } catch (error) {
    log.warning(`mingle: could not reach the other workers: ${error instanceof Error ? error.message : String(error)}`);
    return [];
  }
  const byNode = new Map<string, unknown>();
  for (const reply of replies) for (const [node, value] of Object.entries(reply)) byNode.set(node, value);
  byNode.delete(worker.hostname); // our own reply, should a node of ours already listen
  for (const [node, value] of byNode) neighbours?.set(node, value);
  if (byNode.size === 0) {
    log.info('mingle: all alone');
    return [];
  }
  const synced = [...byNode].filter(([, value]) => Boolean(value));
  log.info(`mingle: sync with ${synced.length} nodes`);
  for (const [node, reply] of synced) {
    log.debug(`mingle: processing reply from ${node}`);
    try {
      syncWithNode(worker, reply);
    } catch (error) {
      log.error(`mingle: sync with ${node} failed: ${errorRepr(error)}`);
    }
  }
  log.info('mingle: sync complete');
  return synced.map(([node]) => node);
}

/** Adopts one neighbour's clock and revoked set (Celery's `sync_with_node`). */
export function syncWithNode(worker: WorkerHost, reply: unknown): void {
  if (typeof reply !== 'object' || reply === null || Array.isArray(reply)) {
    throw new TypeError(`expected a mapping, got ${pythonRepr(reply)}`);
  }
  const { clock, revoked } = reply as MingleReply;
  if (clock) worker.app.clock.adjust(Number(clock));
  else worker.app.clock.forward();
  if (revoked && typeof revoked === 'object' && !Array.isArray(revoked) && Object.keys(revoked).length > 0) {
    worker.state.revoked.update(revoked as Record<string, unknown>);
  }
}

function errorRepr(error: unknown): string {
  return error instanceof Error ? `${error.name}(${pythonRepr(error.message)})` : pythonRepr(String(error));
}
